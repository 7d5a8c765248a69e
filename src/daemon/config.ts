// Daemon options, and how they are read from the environment (`npx cohort daemon`).
import { nodeArgsFor } from '../entry.ts';

export type AgentCommand = { command: string; args: string[] };

export type DaemonOptions = {
  /** Bearer secret the gateway presents; compared in constant time, never logged. */
  secret: string;
  /** The intern's directory: daemon state, agent state and the work dir live under it. */
  dir: string;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  internId?: string | null;
  /** The ACP agent to run; default: the built-in cohort agent. */
  agent?: AgentCommand;
  /** What the built-in agent talks to: the gateway's /api/v1 with the intern's own key and model. */
  model?: { baseUrl: string; apiKey: string; model: string };
  instructions?: string;
  /** Extra environment for the agent process (e.g. a third-party agent's own settings). */
  agentEnv?: Record<string, string>;
  interactionDeadlineMs?: number;
  replayBufferEvents?: number;
  maxPausedRuns?: number;
  keepaliveMs?: number;
  /** Retry-After (seconds) on busy refusals. */
  busyRetryAfterS?: number;
  logLevel?: string;
};

export type ResolvedOptions = Required<Omit<DaemonOptions, 'model' | 'internId'>> & Pick<DaemonOptions, 'model'> & { internId: string | null };

export function builtinAgent(): AgentCommand {
  return {
    command: process.execPath,
    args: nodeArgsFor(import.meta.url, '../agent/main'),
  };
}

export function resolveOptions(o: DaemonOptions): ResolvedOptions {
  return {
    secret: o.secret,
    dir: o.dir,
    host: o.host ?? '127.0.0.1',
    port: o.port ?? 0,
    internId: o.internId ?? null,
    agent: o.agent ?? builtinAgent(),
    model: o.model,
    instructions: o.instructions ?? '',
    agentEnv: o.agentEnv ?? {},
    interactionDeadlineMs: o.interactionDeadlineMs ?? 300_000,
    replayBufferEvents: o.replayBufferEvents ?? 10_000,
    maxPausedRuns: o.maxPausedRuns ?? 32,
    keepaliveMs: o.keepaliveMs ?? 15_000,
    busyRetryAfterS: o.busyRetryAfterS ?? 1,
    logLevel: o.logLevel ?? 'info',
  };
}

const num = (v: string | undefined) => (v === undefined || v === '' ? undefined : Number(v));

/** COHORT_AGENT_COMMAND is a JSON array (["cmd", "arg", …]) or a plain space-separated line. */
function agentFromEnv(v: string | undefined): AgentCommand | undefined {
  if (!v) return undefined;
  const parts = v.trim().startsWith('[') ? (JSON.parse(v) as string[]) : v.trim().split(/\s+/);
  const [command, ...args] = parts;
  return command ? { command, args } : undefined;
}

export function optionsFromEnv(env: NodeJS.ProcessEnv, argv: string[] = []): DaemonOptions {
  const flag = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const secret = env.COHORT_DAEMON_SECRET;
  const dir = flag('dir') ?? env.COHORT_INTERN_DIR;
  if (!secret) throw new Error('COHORT_DAEMON_SECRET is required');
  if (!dir) throw new Error('COHORT_INTERN_DIR (or --dir) is required');
  const baseUrl = env.COHORT_AGENT_BASE_URL;
  return {
    secret,
    dir,
    host: flag('host') ?? env.COHORT_DAEMON_HOST,
    port: num(flag('port') ?? env.COHORT_DAEMON_PORT),
    internId: env.COHORT_INTERN_ID,
    agent: agentFromEnv(env.COHORT_AGENT_COMMAND),
    model: baseUrl ? { baseUrl, apiKey: env.COHORT_AGENT_API_KEY ?? '', model: env.COHORT_AGENT_MODEL ?? 'local/scripted' } : undefined,
    instructions: env.COHORT_AGENT_INSTRUCTIONS,
    interactionDeadlineMs: num(env.COHORT_INTERACTION_DEADLINE_MS),
    replayBufferEvents: num(env.COHORT_REPLAY_BUFFER_EVENTS),
    maxPausedRuns: num(env.COHORT_MAX_PAUSED_RUNS),
    keepaliveMs: num(env.COHORT_DAEMON_KEEPALIVE_MS),
    logLevel: env.LOG_LEVEL,
  };
}
