// Process configuration from environment variables, each with a default that works on one
// machine. Parsed once at start; every variable is documented in docs/reference/configuration.md.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { IsolationOptions } from './interns/provisioner/launch.ts';
import { parseEgress, type EgressPolicy } from './interns/egress.ts';
import type { SlotLimits } from './access/concurrency.ts';
import { parseToolsEnv, TOOL_DEFAULTS } from './inference/tools/env.ts';
import type { ToolsEnv } from './inference/tools/types.ts';
import { parseObservabilityEnv, type ObservabilityEnv } from './observability/config.ts';

const int = (def: number) => z.coerce.number().int().positive().default(def);
const flag = z
  .enum(['0', '1', 'true', 'false'])
  .transform((v) => v === '1' || v === 'true')
  .default(false);
/** A limit where 0 means none. */
const limit = (def: number) => z.coerce.number().int().min(0).default(def);

/** The process's open-file limit (Linux), else a common default. */
function openFileLimit(): number {
  try {
    return Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]) || 1024;
  } catch {
    return 1024;
  }
}

/** Half the open-file limit less a reserve (the database, logs, daemons' pipes): a client's
 * connection can need a second descriptor upstream (an intern daemon, a provider). */
export const defaultMaxConnections = (openFiles: number) => Math.max(64, Math.floor((openFiles - 256) / 2));

const Env = z
  .object({
    HOST: z.string().default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    COHORT_DATA_DIR: z.string().default('./data'),
    DATABASE_URL: z.string().optional(),
    /** PostgreSQL schema to use instead of the connection's default (created if missing). */
    COHORT_PG_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]*$/, 'a lower-case SQL identifier')
      .optional(),
    REDIS_URL: z.string().optional(),
    // ---- faults (docs/failure-modes.md) ----
    /** The longest a Redis command may take before its caller falls back to in-process counts. */
    COHORT_REDIS_TIMEOUT_MS: int(1_000),
    /** The longest a PostgreSQL query (and the wait for a connection) may take before it fails. */
    COHORT_DB_TIMEOUT_MS: int(10_000),
    /** How long a gateway's leases (its provisions and deletions, its concurrency slots in Redis) outlive its last heartbeat. */
    COHORT_GATEWAY_LEASE_MS: int(6_000),
    /** Request-log rows a gateway holds in memory while the store cannot take them, before it spills them to the data dir. */
    COHORT_REQUEST_LOG_QUEUE: int(50_000),
    COHORT_MASTER_KEY: z.string().optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** How long a resolved API key is trusted before it is read again (revocation bound across gateways). */
    COHORT_KEY_CACHE_MS: int(10_000),
    COHORT_INTERACTION_DEADLINE_MS: int(300_000),
    COHORT_KEEPALIVE_MS: int(30_000),
    COHORT_ROUTE_DEADLINE_MS: int(300_000),
    COHORT_TURN_BUDGET_MS: int(600_000),
    COHORT_REPLAY_BUFFER_EVENTS: int(10_000),
    COHORT_TURNS_PER_MINUTE: int(60),
    /** How long a workspace's routing configuration (row, credentials, presets) is cached for model requests. */
    COHORT_ROUTING_CACHE_MS: int(2_000),
    /** Upstream provider timeout: for its first byte and between bytes. */
    COHORT_UPSTREAM_TIMEOUT_MS: int(120_000),
    /** JSON file of model prices (USD per million tokens) extending the built-in table. */
    COHORT_PRICE_TABLE: z.string().optional(),
    /** The gateway's /api/v1 URL as intern agents reach it (default: the address it listens on). */
    COHORT_PUBLIC_URL: z.string().url().optional(),
    /** Runs an intern may hold paused across a question before it refuses another (503 busy). */
    COHORT_MAX_PAUSED_RUNS: int(32),
    /** After SIGTERM/SIGINT, how long open streams may run on before each is ended with an error chunk. */
    COHORT_SHUTDOWN_GRACE_MS: int(10_000),
    // ---- intern isolation (docs/isolation.md) ----
    /** Runs interns with the gateway's own privileges: for a host where isolation cannot be set up, and only for trusted tenants. */
    COHORT_UNSAFE_NO_ISOLATION: flag,
    COHORT_BWRAP: z.string().default('/usr/bin/bwrap'),
    /** Size of each intern's disk (its files and sessions); 0 runs interns on plain directories without a limit. */
    COHORT_INTERN_DISK_MB: z.coerce.number().int().min(0).default(1024),
    COHORT_INTERN_TMP_MB: int(256),
    /** The first of the interns' uids; unset: a range of its own, chosen at the first start (src/gateway/interns/provisioner/uids.ts). */
    COHORT_INTERN_UID_BASE: z.coerce.number().int().min(1000).max(0x7fff_0000).optional(),
    COHORT_INTERN_UID_COUNT: int(65_536),
    /** Processes an intern's uid may run at once (its agent, tools and whatever they start). */
    COHORT_INTERN_MAX_PROCESSES: int(256),
    /** Memory (data segment) each process of an intern may take. */
    COHORT_INTERN_MAX_MEMORY_MB: int(2048),
    COHORT_INTERN_MAX_FILE_MB: int(1024),
    COHORT_INTERN_MAX_OPEN_FILES: int(1024),
    /** Lets manual mode offer "run outside the inner sandbox" to the user; off: escalations are refused. */
    COHORT_ALLOW_ESCALATION: flag,
    /** Interns one account (organization) may have. */
    COHORT_MAX_INTERNS_PER_ACCOUNT: int(50),
    /** The files API (docs/guides/files.md): the largest upload (a file or a folder's tar) and file read, and the most entries of a tar or a listing. */
    COHORT_FILES_MAX_MB: int(256),
    COHORT_FILES_MAX_ENTRIES: int(10_000),
    /** A download (a file, a folder's tar) whose client takes nothing of it for this long is aborted. */
    COHORT_FILES_IDLE_MS: int(60_000),
    /** Hosts (`host` or `host:port`) the gateway clones interns' repositories from. */
    COHORT_GIT_HOSTS: z.string().default('github.com,gitlab.com,bitbucket.org,codeberg.org'),
    COHORT_GIT_TIMEOUT_MS: int(300_000),
    /** Where interns' tools may connect: `none`, or hosts (`example.com`, `*.example.com`, `host:port`) through the gateway's CONNECT proxy. */
    COHORT_INTERN_EGRESS: z.string().default('none'),
    // ---- hibernation and the wake queue (docs/fleet.md) ----
    /** Idle time after which a running intern's daemon and agent are stopped (it wakes on the next chat); 0: never. */
    COHORT_INTERN_IDLE_MS: limit(300_000),
    /** Sandboxes whose daemon and built-in agent are started ahead, so a wake (or a provision) only hands one its intern; 0 (the default): none (docs/fleet.md, "Warm spares"). */
    COHORT_WARM_SPARES: z.coerce.number().int().min(0).max(64).default(0),
    /** Sleeping interns' daemons one gateway starts at once. */
    COHORT_WAKE_CONCURRENCY: int(availableParallelism()),
    /** Wakes that may wait for a start, over all accounts (beyond: 503 busy). */
    COHORT_WAKE_QUEUE: int(64),
    /** Wakes one account (organization) may have waiting. */
    COHORT_WAKE_QUEUE_PER_ACCOUNT: int(16),
    /** A JSON file of agent catalogue entries (docs/agents.md), added to the built-in ones. */
    COHORT_AGENTS_FILE: z.string().optional(),
    /** Bearer token GET /metrics requires; unset, /metrics is open (keep it off the public network). */
    COHORT_METRICS_TOKEN: z.string().optional(),
    /** Log format: `pretty` (readable, for a terminal), `json` (one object a line); default pretty on a TTY, else json. */
    COHORT_LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
    // Abuse resistance (docs/abuse-resistance.md).
    /** How deeply a JSON request body may nest. */
    COHORT_MAX_JSON_DEPTH: int(64),
    /** Open client connections the gateway accepts; more are closed at accept. */
    COHORT_MAX_CONNECTIONS: int(defaultMaxConnections(openFileLimit())),
    /** Open connections from one client address (IPv6: one /64); 0 turns the cap off. */
    COHORT_MAX_CONNECTIONS_PER_ADDRESS: limit(256),
    /** Time to receive a request's head (request line and headers). */
    COHORT_HEADERS_TIMEOUT_MS: int(5_000),
    /** Time to receive a whole request, body included. */
    COHORT_REQUEST_TIMEOUT_MS: int(30_000),
    /** A new connection that has not sent a complete request head within this is closed. */
    COHORT_IDLE_CONNECTION_TIMEOUT_MS: int(10_000),
    COHORT_MAX_MODEL_REQUESTS_PER_KEY: limit(64),
    COHORT_MAX_MODEL_REQUESTS_PER_ACCOUNT: limit(256),
    COHORT_MAX_INTERN_STREAMS_PER_KEY: limit(32),
    COHORT_MAX_INTERN_STREAMS_PER_ACCOUNT: limit(128),
    // ---- server tools (docs/guides/server-tools.md) ----
    /** Server tools this gateway refuses (comma-separated `service:…`), whatever a workspace allows. */
    COHORT_SERVER_TOOLS_OFF: z.string().optional(),
    /** Characters of a tool's result a model gets; the rest is cut. */
    COHORT_SERVER_TOOL_OUTPUT_CHARS: int(TOOL_DEFAULTS.outputChars),
    /** How long one request's tool loop may run before its final turn. */
    COHORT_SERVER_TOOLS_DEADLINE_MS: int(TOOL_DEFAULTS.deadlineMs),
    /** Where web_fetch (and web_search's page reads) may connect: `none`, `*` (any public host, ports 80 and 443), or hosts as COHORT_INTERN_EGRESS; unset: COHORT_INTERN_EGRESS. */
    COHORT_WEB_FETCH_EGRESS: z.string().optional(),
    COHORT_WEB_FETCH_MAX_BYTES: int(TOOL_DEFAULTS.fetchMaxBytes),
    COHORT_WEB_FETCH_TIMEOUT_MS: int(TOOL_DEFAULTS.fetchTimeoutMs),
    /** web_search's backend: a SearXNG instance (its JSON API), Brave Search or Tavily; unset: web_search is refused. */
    COHORT_WEB_SEARCH_PROVIDER: z.enum(['searxng', 'brave', 'tavily']).optional(),
    COHORT_WEB_SEARCH_URL: z.string().url().optional(),
    COHORT_WEB_SEARCH_API_KEY: z.string().optional(),
    /** Size of the memory-backed /work and /tmp of a request's command sandbox (bash, shell, apply_patch). */
    COHORT_TOOL_SANDBOX_MB: int(TOOL_DEFAULTS.sandboxMb),
    /** The longest one command of bash or shell may run. */
    COHORT_TOOL_SANDBOX_TIMEOUT_MS: int(TOOL_DEFAULTS.sandboxTimeoutMs),
    /** The advisor tool's model when a request names none. */
    COHORT_ADVISOR_MODEL: z.string().min(1).max(256).optional(),
    /** The fusion tool's models when a request names none (comma-separated). */
    COHORT_FUSION_MODELS: z.string().optional(),
  })
  .refine((e) => e.COHORT_HEADERS_TIMEOUT_MS <= e.COHORT_REQUEST_TIMEOUT_MS, {
    message: 'COHORT_HEADERS_TIMEOUT_MS must not exceed COHORT_REQUEST_TIMEOUT_MS',
    path: ['COHORT_HEADERS_TIMEOUT_MS'],
  });

export type Config = {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  pgSchema?: string;
  redisUrl?: string;
  /** Bounds on waits for the dependencies, and how long a dead gateway's work stays its own (docs/failure-modes.md). */
  faults: { redisTimeoutMs: number; dbTimeoutMs: number; gatewayLeaseMs: number; requestLogQueue: number };
  masterKey?: string;
  logLevel: z.infer<typeof Env>['LOG_LEVEL'];
  keyCacheMs: number;
  interactionDeadlineMs: number;
  keepaliveMs: number;
  routeDeadlineMs: number;
  turnBudgetMs: number;
  replayBufferEvents: number;
  turnsPerMinute: number;
  routingCacheMs: number;
  upstreamTimeoutMs: number;
  priceTable?: string;
  /** COHORT_PROVIDER_<SLUG>_{BASE_URL,API_KEY,ZDR}: provider endpoints and the operator's shared keys. */
  providerEnv: Record<string, string>;
  publicUrl?: string;
  maxPausedRuns: number;
  shutdownGraceMs: number;
  isolation: IsolationOptions;
  maxInternsPerAccount: number;
  /** The files API's bounds. */
  files: { maxBytes: number; maxEntries: number; idleMs: number };
  /** Where interns' repositories are cloned from, and how long a clone may take. */
  git: { hosts: string[]; timeoutMs: number };
  /** Hibernation: idle time before an intern sleeps (0: never), and the wake queue's limits. */
  fleet: {
    idleMs: number;
    spares: number;
    wake: { concurrency: number; maxQueued: number; maxQueuedPerAccount: number };
  };
  egress: EgressPolicy;
  agentsFile?: string;
  maxJsonDepth: number;
  connections: {
    max: number;
    perAddress: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    idleTimeoutMs: number;
  };
  /** Concurrent model requests and intern chat streams per API key and per account (0: no limit). */
  concurrency: SlotLimits;
  metricsToken?: string;
  logFormat?: 'pretty' | 'json';
  /** Server tools: what the operator configured for them (docs/reference/configuration.md). */
  tools: ToolsEnv;
  /** Broadcast and the request log's keeping (docs/guides/observability.md). */
  observability: ObservabilityEnv;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A variable set to nothing (`COHORT_DATA_DIR=` in a compose file) means its default, not "" (which is the working directory, or 0).
  const e = Env.parse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  const egress = parseEgress(e.COHORT_INTERN_EGRESS);
  const isolated = !e.COHORT_UNSAFE_NO_ISOLATION;
  const root = process.getuid?.() === 0;
  const tools = parseToolsEnv({
    off: e.COHORT_SERVER_TOOLS_OFF,
    outputChars: e.COHORT_SERVER_TOOL_OUTPUT_CHARS,
    deadlineMs: e.COHORT_SERVER_TOOLS_DEADLINE_MS,
    webFetchEgress: e.COHORT_WEB_FETCH_EGRESS,
    internEgress: e.COHORT_INTERN_EGRESS,
    fetchMaxBytes: e.COHORT_WEB_FETCH_MAX_BYTES,
    fetchTimeoutMs: e.COHORT_WEB_FETCH_TIMEOUT_MS,
    searchProvider: e.COHORT_WEB_SEARCH_PROVIDER,
    searchUrl: e.COHORT_WEB_SEARCH_URL,
    searchKey: e.COHORT_WEB_SEARCH_API_KEY,
    sandbox:
      isolated && root
        ? {
            diskMb: e.COHORT_TOOL_SANDBOX_MB,
            timeoutMs: e.COHORT_TOOL_SANDBOX_TIMEOUT_MS,
            bwrapPath: e.COHORT_BWRAP,
            limits: {
              processes: e.COHORT_INTERN_MAX_PROCESSES,
              memoryMb: e.COHORT_INTERN_MAX_MEMORY_MB,
              fileMb: e.COHORT_INTERN_MAX_FILE_MB,
              openFiles: e.COHORT_INTERN_MAX_OPEN_FILES,
            },
          }
        : null,
    sandboxOff: !isolated
      ? "COHORT_UNSAFE_NO_ISOLATION is set, and tenants' commands run only isolated"
      : root
        ? null
        : 'the gateway does not run as root, which giving the sandbox a uid of its own needs (docs/isolation.md)',
    advisorModel: e.COHORT_ADVISOR_MODEL,
    fusionModels: e.COHORT_FUSION_MODELS,
  });
  return {
    tools,
    observability: parseObservabilityEnv(env),
    host: e.HOST,
    port: e.PORT,
    dataDir: resolve(e.COHORT_DATA_DIR),
    databaseUrl: e.DATABASE_URL || undefined,
    pgSchema: e.COHORT_PG_SCHEMA || undefined,
    redisUrl: e.REDIS_URL || undefined,
    faults: {
      redisTimeoutMs: e.COHORT_REDIS_TIMEOUT_MS,
      dbTimeoutMs: e.COHORT_DB_TIMEOUT_MS,
      gatewayLeaseMs: e.COHORT_GATEWAY_LEASE_MS,
      requestLogQueue: e.COHORT_REQUEST_LOG_QUEUE,
    },
    masterKey: e.COHORT_MASTER_KEY || undefined,
    logLevel: e.LOG_LEVEL,
    keyCacheMs: e.COHORT_KEY_CACHE_MS,
    interactionDeadlineMs: e.COHORT_INTERACTION_DEADLINE_MS,
    keepaliveMs: e.COHORT_KEEPALIVE_MS,
    routeDeadlineMs: e.COHORT_ROUTE_DEADLINE_MS,
    turnBudgetMs: e.COHORT_TURN_BUDGET_MS,
    replayBufferEvents: e.COHORT_REPLAY_BUFFER_EVENTS,
    turnsPerMinute: e.COHORT_TURNS_PER_MINUTE,
    routingCacheMs: e.COHORT_ROUTING_CACHE_MS,
    upstreamTimeoutMs: e.COHORT_UPSTREAM_TIMEOUT_MS,
    priceTable: e.COHORT_PRICE_TABLE || undefined,
    providerEnv: Object.fromEntries(
      Object.entries(env).filter((kv): kv is [string, string] => kv[0].startsWith('COHORT_PROVIDER_') && !!kv[1]),
    ),
    publicUrl: e.COHORT_PUBLIC_URL || undefined,
    maxPausedRuns: e.COHORT_MAX_PAUSED_RUNS,
    shutdownGraceMs: e.COHORT_SHUTDOWN_GRACE_MS,
    isolation: {
      enabled: !e.COHORT_UNSAFE_NO_ISOLATION,
      bwrapPath: e.COHORT_BWRAP,
      diskMb: e.COHORT_INTERN_DISK_MB,
      tmpMb: e.COHORT_INTERN_TMP_MB,
      uidBase: e.COHORT_INTERN_UID_BASE,
      uidCount: e.COHORT_INTERN_UID_COUNT,
      limits: {
        processes: e.COHORT_INTERN_MAX_PROCESSES,
        memoryMb: e.COHORT_INTERN_MAX_MEMORY_MB,
        fileMb: e.COHORT_INTERN_MAX_FILE_MB,
        openFiles: e.COHORT_INTERN_MAX_OPEN_FILES,
      },
      allowEscalation: e.COHORT_ALLOW_ESCALATION,
      egress: egress.rules.length > 0,
    },
    maxInternsPerAccount: e.COHORT_MAX_INTERNS_PER_ACCOUNT,
    files: {
      maxBytes: e.COHORT_FILES_MAX_MB * 1024 * 1024,
      maxEntries: e.COHORT_FILES_MAX_ENTRIES,
      idleMs: e.COHORT_FILES_IDLE_MS,
    },
    git: {
      hosts: e.COHORT_GIT_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
      timeoutMs: e.COHORT_GIT_TIMEOUT_MS,
    },
    fleet: {
      idleMs: e.COHORT_INTERN_IDLE_MS,
      spares: e.COHORT_WARM_SPARES,
      wake: {
        concurrency: e.COHORT_WAKE_CONCURRENCY,
        maxQueued: e.COHORT_WAKE_QUEUE,
        maxQueuedPerAccount: e.COHORT_WAKE_QUEUE_PER_ACCOUNT,
      },
    },
    egress,
    agentsFile: e.COHORT_AGENTS_FILE || undefined,
    maxJsonDepth: e.COHORT_MAX_JSON_DEPTH,
    metricsToken: e.COHORT_METRICS_TOKEN || undefined,
    logFormat: e.COHORT_LOG_FORMAT,
    connections: {
      max: e.COHORT_MAX_CONNECTIONS,
      perAddress: e.COHORT_MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: e.COHORT_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.COHORT_REQUEST_TIMEOUT_MS,
      idleTimeoutMs: e.COHORT_IDLE_CONNECTION_TIMEOUT_MS,
    },
    concurrency: {
      model: { perKey: e.COHORT_MAX_MODEL_REQUESTS_PER_KEY, perAccount: e.COHORT_MAX_MODEL_REQUESTS_PER_ACCOUNT },
      stream: { perKey: e.COHORT_MAX_INTERN_STREAMS_PER_KEY, perAccount: e.COHORT_MAX_INTERN_STREAMS_PER_ACCOUNT },
    },
  };
}
