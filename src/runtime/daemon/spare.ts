// A warm spare (docs/fleet.md, "Warm spares"): a daemon started in a sandbox before its intern is
// known, with the built-in agent's process started beside it, still as root. A wake then hands both
// their intern instead of starting them: the gateway mounts the intern's disk under the sandbox and
// writes the assignment on the daemon's stdin; the daemon passes the agent its part (uid, working
// directory, environment), and the agent drops to the intern's uid before it reads anything else.
// Node built-ins only, like agent-command.ts: a spare starts its agent before loading the rest.
import type { StartedAgent } from '../acp/spawn.ts';
import { type AgentCommand, startAgentProcess } from '../acp/spawn.ts';

/** What the gateway writes on a spare daemon's stdin, one JSON line: the secret, and the settings
 * an intern's daemon otherwise finds in its environment (COHORT_INTERN_ID, COHORT_AGENT_UID, …). */
export type Assignment = { secret: string; env: Record<string, string> };

/** What the daemon writes first on a spare agent's stdin, one JSON line (runtime/agent/spare.ts). */
export type AgentAssignment = { uid: number; cwd: string; env: NodeJS.ProcessEnv };

/** The line a spare prints once its agent runs and it waits for an intern (the gateway hands out
 * only spares that said so). */
export const SPARE_WAITING = '{"spare":"waiting"}';

export function parseAssignment(line: string): Assignment {
  const a = JSON.parse(line) as Partial<Assignment>;
  if (typeof a.secret !== 'string' || !a.secret || typeof a.env !== 'object' || a.env === null)
    throw new Error('the spare\'s assignment must be {"secret": …, "env": {…}}');
  for (const [k, v] of Object.entries(a.env))
    if (typeof v !== 'string') throw new Error(`the spare's assignment: env.${k} must be a string`);
  return a as Assignment;
}

/** The built-in agent started for a spare: behind the same limits, as root with nothing but where to
 * find its assignment, in / (the intern's disk is not mounted yet). */
export function startSpareAgent(line: { command: string; args: string[] }): StartedAgent {
  const command: AgentCommand = {
    ...line,
    cwd: '/',
    env: { COHORT_AGENT_SPARE: '1', PATH: process.env.PATH ?? '/usr/bin:/bin' },
  };
  return startAgentProcess(command);
}

/** Gives the spare's agent its intern: the uid, working directory and environment the daemon
 * would have started it with. */
export function assignAgent(spare: StartedAgent, c: AgentCommand): StartedAgent {
  if (c.uid === undefined) throw new Error('a spare agent runs only as an intern uid');
  const a: AgentAssignment = { uid: c.uid, cwd: c.cwd, env: c.env };
  spare.child.stdin.write(`${JSON.stringify(a)}\n`);
  return spare;
}
