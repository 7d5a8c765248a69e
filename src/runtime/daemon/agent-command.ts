// How the intern's agent is started: its command line (behind prlimit under the intern's uid), a
// clean environment with the model endpoint filled in, its working directory. Under an intern's
// uid, the built-in agent starts as root and becomes the uid in-process (so the tenant's commands,
// of the same uid, cannot trace it: docs/isolation.md), and any other agent runs under the tenant's
// seccomp filter. Node built-ins and the sandbox's pure modules only, so the daemon can start its
// agent before loading the rest of itself (main.ts).
import { mkdirSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { type AgentCommand, type StartedAgent, startAgentProcess } from '../acp/spawn.ts';
import { BWRAP_PATH, confinedArgv } from '../sandbox/bwrap.ts';
import { seccompProgram } from '../sandbox/seccomp.ts';
import type { ResolvedOptions } from './config.ts';
import { assignAgent, startSpareAgent } from './spare.ts';

type ModelEndpoint = { baseUrl: string; apiKey: string; model: string } | undefined;

/** A catalogue value with the intern's model endpoint filled in ({{base_url}}, {{origin}}, {{api_key}}, {{model}}). */
export function fill(value: string, model: ModelEndpoint): string {
  if (!model) return value;
  const origin = model.baseUrl ? new URL(model.baseUrl).origin : '';
  return value
    .replaceAll('{{base_url}}', model.baseUrl)
    .replaceAll('{{origin}}', origin)
    .replaceAll('{{api_key}}', model.apiKey)
    .replaceAll('{{model}}', model.model);
}

const fillEnv = (env: Record<string, string>, model: ModelEndpoint) =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [k, fill(v, model)]));

/** The agent's command line; under an intern uid, behind prlimit so its limits hold for all it
 * starts; behind `nice` when it does not lower its priority itself. */
function commandLine(o: ResolvedOptions): { command: string; args: string[] } {
  const line = limited(o);
  // `nice -n` adds to the daemon's own priority, which is lowered after its first turn.
  const by = o.nice === undefined || o.builtinAgent ? 0 : o.nice - getPriority();
  return by > 0 ? { command: '/usr/bin/nice', args: ['-n', String(by), '--', line.command, ...line.args] } : line;
}

/** The agent's command line behind prlimit where the intern has limits (a warm spare starts the
 * built-in agent's this way before its intern is known: the limits are the installation's). */
export function limited(o: ResolvedOptions): { command: string; args: string[] } {
  const l = o.agentLimits;
  const agent = confined(o, { command: o.agent.command, args: o.agent.args.map((a) => fill(a, o.model)) });
  if (!l) return agent;
  const mb = (n: number) => String(n * 1024 * 1024);
  const limits = [
    `--nproc=${l.processes}`,
    `--data=${mb(l.memoryMb)}`,
    `--fsize=${mb(l.fileMb)}`,
    `--nofile=${l.openFiles}`,
    `--core=0`,
  ];
  return { command: '/usr/bin/prlimit', args: [...limits, '--', agent.command, ...agent.args] };
}

/** Whether an agent other than the built-in one runs under the tenant's filter: under an intern uid. */
const confines = (o: ResolvedOptions): boolean => o.agentUid !== undefined && !o.builtinAgent;

/** Claude Code, Codex or any other agent runs tools itself: under an intern uid, it runs in
 * bubblewrap under the tenant's filter (the built-in agent applies the filter to each command). An
 * agent that builds sandboxes of its own (the operator's catalogue says so: Codex) keeps user
 * namespaces, and so runs under the runtime's filter only. */
function confined(o: ResolvedOptions, agent: { command: string; args: string[] }): { command: string; args: string[] } {
  if (!confines(o)) return agent;
  return {
    command: process.env.COHORT_AGENT_BWRAP ?? BWRAP_PATH,
    args: confinedArgv({
      workDir: workDirOf(o),
      argv: [agent.command, ...agent.args],
      userNamespaces: o.agentUserNamespaces,
    }),
  };
}

function environment(o: ResolvedOptions): NodeJS.ProcessEnv {
  // The daemon's own secret and settings stay out of the agent's environment; the operator's
  // COHORT_AGENT_* tuning (context window, step limit, bwrap path) passes through.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('COHORT_') || k.startsWith('COHORT_AGENT_')),
  );
  delete env.COHORT_AGENT_COMMAND;
  env.COHORT_AGENT_STATE_DIR = join(o.dir, 'agent');
  env.COHORT_AGENT_ALLOW_ESCALATION = o.allowEscalation ? '1' : '0';
  if (o.agentUid !== undefined) env.HOME = join(o.dir, 'home');
  // The built-in agent runs each command under the tenant's filter (agent/config.ts).
  if (o.agentUid !== undefined && o.builtinAgent) env.COHORT_AGENT_CONFINE = '1';
  if (o.egressProxy && o.model) {
    // The forwarder carries CONNECT to a gateway, which tunnels to the hosts the operator allows.
    const proxy = new URL(o.model.baseUrl).origin;
    for (const k of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[k] = proxy;
    env.NO_PROXY = env.no_proxy = '127.0.0.1,localhost';
  }
  env.LOG_LEVEL = o.logLevel;
  if (o.nice !== undefined && o.builtinAgent) env.COHORT_AGENT_NICE = String(o.nice);
  if (o.instructions) env.COHORT_AGENT_INSTRUCTIONS = o.instructions;
  if (o.model) {
    env.COHORT_AGENT_BASE_URL = o.model.baseUrl;
    env.COHORT_AGENT_API_KEY = o.model.apiKey;
    env.COHORT_AGENT_MODEL = o.model.model;
  }
  return { ...env, ...fillEnv(o.agentEnv, o.model) };
}

/** The agent's working directory, where its sessions run. */
export const workDirOf = (o: ResolvedOptions): string => join(o.dir, 'work');

/** The command that starts the agent; its working directory is made here, before the process starts in it. */
export function agentCommand(o: ResolvedOptions): AgentCommand {
  const cwd = workDirOf(o);
  mkdirSync(cwd, { recursive: true });
  const filter = confines(o) ? { filter: seccompProgram(o.agentUserNamespaces ? 'runtime' : 'tenant') } : {};
  return { ...commandLine(o), cwd, uid: o.agentUid, env: environment(o), ...filter };
}

/** Starts the agent. Under an intern uid the built-in agent starts as root, as a warm spare's does
 * (spare.ts), and is handed its uid at once: one that drops its privileges in-process is not
 * dumpable, so the commands it runs as the same uid cannot trace it or read its memory. */
export function startAgent(o: ResolvedOptions, command: AgentCommand = agentCommand(o)): StartedAgent {
  if (o.builtinAgent && command.uid !== undefined) return assignAgent(startSpareAgent(limited(o)), command);
  return startAgentProcess(command);
}
