// Daemon options, and how they are read from the environment (`bin/cohort.mjs daemon`).
import { startArgsFor } from '../../shared/entry.ts';
import type { AgentLimits } from '../../shared/daemon-protocol.ts';

export type AgentCommand = { command: string; args: string[] };

export type DaemonOptions = {
  /** Bearer secret the gateway presents; compared in constant time, never logged. */
  secret: string;
  /** The intern's directory: daemon state, agent state and the work dir live under it. */
  dir: string;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Listen on this unix socket instead of host/port (inside an isolated runtime). */
  socket?: string;
  /** A directory of gateway sockets: the agent's model requests are forwarded there from a loopback port of the daemon's own. */
  gatewaySockets?: string;
  /** Run the agent (and so every tool it starts) as this uid and gid, with these limits. */
  agentUid?: number;
  agentLimits?: AgentLimits;
  /** Give the agent HTTP(S)_PROXY at the forwarder: the gateways proxy CONNECT for the hosts the operator allows. */
  egressProxy?: boolean;
  /** Whether manual mode may offer an escalation out of the inner sandbox (the operator's COHORT_ALLOW_ESCALATION). */
  allowEscalation?: boolean;
  internId?: string | null;
  /** The ACP agent to run; default: the built-in cohort agent. */
  agent?: AgentCommand;
  /** What the built-in agent talks to: the gateway's /api/v1 with the intern's own key and model. */
  model?: { baseUrl: string; apiKey: string; model: string };
  instructions?: string;
  /** Extra environment for the agent process (a third-party agent's own settings); values may name
   * {{base_url}}, {{origin}}, {{api_key}} and {{model}}, filled from `model`. */
  agentEnv?: Record<string, string>;
  /** The agent's own session mode ids for the approval modes `manual` and `self-drive`, where they differ. */
  agentModes?: Record<string, string>;
  /** The agent builds sandboxes of its own, which need user namespaces (docs/isolation.md). */
  agentUserNamespaces?: boolean;
  interactionDeadlineMs?: number;
  replayBufferEvents?: number;
  maxPausedRuns?: number;
  keepaliveMs?: number;
  /** How long the agent has to confirm a cancel before the daemon restarts it, so an agent that
   * ignores `session/cancel` cannot hold the intern busy forever. */
  cancelGraceMs?: number;
  /** The CPU priority (nice) of this intern's processes once it has started: the daemon and the
   * built-in agent start at the caller's priority and lower themselves after their first turn (or
   * 5 s); any other agent starts under `nice`. Unset: nothing changes priority. */
  nice?: number;
  /** Retry-After (seconds) on busy refusals. */
  busyRetryAfterS?: number;
  logLevel?: string;
};

type Optional = 'model' | 'internId' | 'socket' | 'gatewaySockets' | 'agentUid' | 'agentLimits' | 'nice';
export type ResolvedOptions = Required<Omit<DaemonOptions, Optional>> &
  Pick<DaemonOptions, Optional> & {
    internId: string | null;
    /** The agent is cohort's own (it lowers its priority itself, see `nice`). */
    builtinAgent: boolean;
  };

export function builtinAgent(): AgentCommand {
  return {
    command: process.execPath,
    args: startArgsFor(import.meta.url, '../agent/main'),
  };
}

export function resolveOptions(o: DaemonOptions): ResolvedOptions {
  return {
    secret: o.secret,
    dir: o.dir,
    host: o.host ?? '127.0.0.1',
    port: o.port ?? 0,
    internId: o.internId ?? null,
    socket: o.socket,
    gatewaySockets: o.gatewaySockets,
    agentUid: o.agentUid,
    agentLimits: o.agentLimits,
    allowEscalation: o.allowEscalation ?? false,
    egressProxy: o.egressProxy ?? false,
    agent: o.agent ?? builtinAgent(),
    builtinAgent: o.agent === undefined,
    nice: o.nice,
    model: o.model,
    instructions: o.instructions ?? '',
    agentEnv: o.agentEnv ?? {},
    agentModes: o.agentModes ?? {},
    agentUserNamespaces: o.agentUserNamespaces ?? false,
    interactionDeadlineMs: o.interactionDeadlineMs ?? 300_000,
    replayBufferEvents: o.replayBufferEvents ?? 10_000,
    maxPausedRuns: o.maxPausedRuns ?? 32,
    keepaliveMs: o.keepaliveMs ?? 15_000,
    cancelGraceMs: o.cancelGraceMs ?? 30_000,
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

/** `secret`: read from stdin by the caller, where the provisioner keeps it out of the environment. */
export function optionsFromEnv(
  env: NodeJS.ProcessEnv,
  argv: string[] = [],
  opts: { secret?: string } = {},
): DaemonOptions {
  const flag = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const secret = opts.secret ?? env.COHORT_DAEMON_SECRET;
  const dir = flag('dir') ?? env.COHORT_INTERN_DIR;
  if (!secret)
    throw new Error('COHORT_DAEMON_SECRET (or the secret on stdin, with COHORT_DAEMON_SECRET_STDIN=1) is required');
  if (!dir) throw new Error('COHORT_INTERN_DIR (or --dir) is required');
  // Behind gateway sockets the base URL is the daemon's own forwarder: startDaemon sets it once that listens.
  const baseUrl = env.COHORT_AGENT_BASE_URL ?? (env.COHORT_GATEWAY_SOCKETS ? '' : undefined);
  return {
    secret,
    dir,
    host: flag('host') ?? env.COHORT_DAEMON_HOST,
    port: num(flag('port') ?? env.COHORT_DAEMON_PORT),
    socket: env.COHORT_DAEMON_SOCKET || undefined,
    gatewaySockets: env.COHORT_GATEWAY_SOCKETS || undefined,
    agentUid: num(env.COHORT_AGENT_UID),
    agentLimits: env.COHORT_AGENT_LIMITS ? (JSON.parse(env.COHORT_AGENT_LIMITS) as AgentLimits) : undefined,
    allowEscalation: env.COHORT_ALLOW_ESCALATION === '1',
    egressProxy: env.COHORT_INTERN_EGRESS_PROXY === '1',
    agentEnv: env.COHORT_AGENT_ENV ? (JSON.parse(env.COHORT_AGENT_ENV) as Record<string, string>) : undefined,
    agentModes: env.COHORT_AGENT_MODES ? (JSON.parse(env.COHORT_AGENT_MODES) as Record<string, string>) : undefined,
    agentUserNamespaces: env.COHORT_AGENT_USER_NAMESPACES === '1',
    internId: env.COHORT_INTERN_ID,
    agent: agentFromEnv(env.COHORT_AGENT_COMMAND),
    model:
      baseUrl !== undefined
        ? { baseUrl, apiKey: env.COHORT_AGENT_API_KEY ?? '', model: env.COHORT_AGENT_MODEL ?? 'local/scripted' }
        : undefined,
    instructions: env.COHORT_AGENT_INSTRUCTIONS,
    interactionDeadlineMs: num(env.COHORT_INTERACTION_DEADLINE_MS),
    replayBufferEvents: num(env.COHORT_REPLAY_BUFFER_EVENTS),
    maxPausedRuns: num(env.COHORT_MAX_PAUSED_RUNS),
    keepaliveMs: num(env.COHORT_DAEMON_KEEPALIVE_MS),
    cancelGraceMs: num(env.COHORT_DAEMON_CANCEL_GRACE_MS),
    nice: num(env.COHORT_DAEMON_NICE),
    logLevel: env.LOG_LEVEL,
  };
}
