// Starting an agent's process, apart from speaking ACP to it: node built-ins only, so the daemon
// can start its agent before it loads the ACP SDK and its own code (the two loads then overlap,
// which is most of what waking a sleeping intern costs).
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export type AgentExit = { code: number | null; signal: string | null };

export type AgentCommand = {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Run the agent as this uid and gid (the daemon then needs CAP_SETUID, CAP_SETGID and CAP_KILL). */
  uid?: number;
};

/** A started agent process and its exit, watched from the start so an early exit is never missed. */
export type StartedAgent = { child: ChildProcessByStdio<Writable, Readable, Readable>; exited: Promise<AgentExit> };

export function startAgentProcess(c: AgentCommand): StartedAgent {
  const ids = c.uid === undefined ? {} : { uid: c.uid, gid: c.uid };
  const child = spawn(c.command, c.args, { cwd: c.cwd, env: c.env, stdio: ['pipe', 'pipe', 'pipe'], ...ids });
  const exited = new Promise<AgentExit>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', () => resolve({ code: null, signal: null }));
  });
  return { child, exited };
}
