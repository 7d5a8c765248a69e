// The built-in agent's configuration, from the environment the daemon gives it.
import { join } from 'node:path';
import { BWRAP_PATH, seccompProgram } from '../sandbox/index.ts';

export type AgentConfig = {
  /** OpenAI-compatible base URL ending before /chat/completions (the gateway's /api/v1). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Standing instructions: the system prompt of every model call. */
  instructions: string;
  /** Where conversations are persisted (one JSON file per session). */
  stateDir: string;
  /** Reported as `size` in usage updates. */
  contextWindow: number;
  /** Model calls per turn before the agent stops with max_turn_requests. */
  maxSteps: number;
  /** The bubblewrap binary for manual-mode shell calls. */
  bwrapPath: string;
  /** Whether manual mode may run a command outside its sandbox when the user allows it (the operator's COHORT_ALLOW_ESCALATION). */
  allowEscalation: boolean;
  /** A shell command is killed after this long (COHORT_AGENT_COMMAND_TIMEOUT_MS; 0: no limit). */
  commandTimeoutMs: number;
  /** The tenant's seccomp program, when every command runs under it (COHORT_AGENT_CONFINE, set by
   * an isolated intern's daemon: docs/isolation.md, "System calls"); null on a bare host. */
  tenantFilter: Buffer | null;
  /** The priority (nice) to lower to after the first turn, the first command or 5 s (COHORT_AGENT_NICE, set by the daemon). */
  nice: number | undefined;
};

export function agentConfigFromEnv(env: NodeJS.ProcessEnv): AgentConfig {
  const need = (k: string) => {
    const v = env[k];
    if (!v) throw new Error(`${k} is required`);
    return v;
  };
  return {
    baseUrl: need('COHORT_AGENT_BASE_URL'),
    apiKey: env.COHORT_AGENT_API_KEY ?? '',
    model: need('COHORT_AGENT_MODEL'),
    instructions: env.COHORT_AGENT_INSTRUCTIONS ?? '',
    stateDir: env.COHORT_AGENT_STATE_DIR ?? join(process.cwd(), '.cohort-agent'),
    contextWindow: Number(env.COHORT_AGENT_CONTEXT_WINDOW ?? 128000),
    maxSteps: Number(env.COHORT_AGENT_MAX_STEPS ?? 50),
    bwrapPath: env.COHORT_AGENT_BWRAP ?? BWRAP_PATH,
    allowEscalation: env.COHORT_AGENT_ALLOW_ESCALATION === '1',
    commandTimeoutMs: Number(env.COHORT_AGENT_COMMAND_TIMEOUT_MS ?? 120_000),
    tenantFilter: env.COHORT_AGENT_CONFINE === '1' ? seccompProgram('tenant') : null,
    nice: env.COHORT_AGENT_NICE ? Number(env.COHORT_AGENT_NICE) : undefined,
  };
}

/** The environment a shell command sees: the agent's own, minus cohort's settings and secrets. */
export function shellEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('COHORT_')));
}
