// The gateway⇄daemon protocol (docs/daemon-protocol.md): one Zod schema per request, response,
// stream event and refusal. Both sides import this file and nothing else of each other.
// May import: zod, ./refusals.ts (the refusal registry the gateway shares), ./sse/write.ts, ./openai.ts.
import { z } from 'zod';
import { Reason, REFUSALS, type RefusalKind } from './refusals.ts';
import { dataFrame } from './sse/write.ts';
import { Usage as OpenAIUsage } from './openai.ts';

export const DAEMON_PROTOCOL_VERSION = 1;

/** Paths, relative to the daemon's base URL (e.g. `http://127.0.0.1:7001`). */
export const daemonPaths = {
  health: '/v1/health',
  status: '/v1/status',
  turns: '/v1/turns',
  answer: (sessionId: string, interactionId: string) =>
    `/v1/sessions/${encodeURIComponent(sessionId)}/interactions/${encodeURIComponent(interactionId)}`,
  events: (runId: string, after?: number) =>
    `/v1/runs/${encodeURIComponent(runId)}/events${after === undefined ? '' : `?after=${after}`}`,
  cancelRun: (runId: string) => `/v1/runs/${encodeURIComponent(runId)}/cancel`,
  cancelSession: (sessionId: string) => `/v1/sessions/${encodeURIComponent(sessionId)}/cancel`,
  hibernate: '/v1/hibernate',
} as const;

// ---- limits (docs/reference/intern-chat.md#limits) ----
export const MAX_BODY_BYTES = 1_048_576;
export const MAX_PROMPT_CHARS = 32_000;

/** Whether a prompt is over the limit, in characters (code points: an emoji is one, not two UTF-16 units). */
export function promptTooLong(prompt: string): boolean {
  if (prompt.length <= MAX_PROMPT_CHARS) return false; // never more code points than units
  let chars = 0;
  for (const _ of prompt) if (++chars > MAX_PROMPT_CHARS) return true;
  return false;
}

// ---- shared scalars ----
export const SessionId = z.string().min(1).max(256);
export const InteractionId = z.string().min(1).max(128);
export const ApprovalMode = z.enum(['manual', 'self-drive']);
export type ApprovalMode = z.infer<typeof ApprovalMode>;
export const PermissionOptionKind = z.enum(['allow_once', 'allow_always', 'reject_once', 'reject_always']);
export type PermissionOptionKind = z.infer<typeof PermissionOptionKind>;

// The reasons and the daemon's refusals are the registry the gateway shares (./refusals.ts).
export { Reason, REFUSALS, type RefusalKind } from './refusals.ts';

// ---- requests ----
/** POST /v1/turns: a user message. Starts a run, or steers the session's running turn (202). */
export const TurnRequest = z.object({
  session_id: SessionId.optional(),
  prompt: z
    .string()
    .min(1)
    .refine((p) => !promptTooLong(p), `at most ${MAX_PROMPT_CHARS} characters`),
  approval_mode: ApprovalMode.default('self-drive'),
});
export type TurnRequest = z.input<typeof TurnRequest>;

/**
 * POST /v1/sessions/{session_id}/interactions/{interaction_id}: the `content` of the caller's
 * `tool` message, verbatim. Permission: an offered option kind or `cancel`. Question: a JSON
 * object string {action: accept|decline|cancel, content?: {field: value}}.
 */
export const AnswerRequest = z.object({ answer: z.string().max(MAX_BODY_BYTES) });
export type AnswerRequest = z.infer<typeof AnswerRequest>;

/**
 * POST /v1/hibernate: the gateway asks an idle daemon to go to sleep (docs/fleet.md). Granted only
 * when no run is live (none running or paused) and none has been for `idle_ms`; from then on the
 * daemon refuses new work (`409 intern_not_ready`) and waits to be stopped. Otherwise `409 busy`.
 */
export const HibernateRequest = z.object({ idle_ms: z.number().int().min(0) });
export type HibernateRequest = z.infer<typeof HibernateRequest>;

// ---- responses ----
export const SteeredResponse = z.object({ session_id: SessionId, status: z.literal('steered') });
export type SteeredResponse = z.infer<typeof SteeredResponse>;

export const RunPhase = z.enum(['running', 'paused', 'cancelling', 'completed', 'failed', 'ended']);
export type RunPhase = z.infer<typeof RunPhase>;

/** POST .../cancel: answered once the agent confirmed the ending (or the run had already ended). */
export const CancelResponse = z.object({ run_id: z.string(), session_id: SessionId, phase: RunPhase });
export type CancelResponse = z.infer<typeof CancelResponse>;

export const HibernateResponse = z.object({ hibernating: z.literal(true) });
export type HibernateResponse = z.infer<typeof HibernateResponse>;

export const HealthResponse = z.object({ status: z.literal('ok'), protocol: z.literal(DAEMON_PROTOCOL_VERSION) });
export type HealthResponse = z.infer<typeof HealthResponse>;

export const RunSummary = z.object({
  run_id: z.string(),
  session_id: SessionId,
  phase: RunPhase,
  attached: z.boolean(),
  /** seq of the run's latest event. */
  last_seq: z.number().int(),
  /** ISO time the pending interaction expires, while paused. */
  deadline_at: z.string().nullable(),
});
export type RunSummary = z.infer<typeof RunSummary>;

export const StatusResponse = z.object({
  intern_id: z.string().nullable(),
  protocol: z.literal(DAEMON_PROTOCOL_VERSION),
  agent: z.object({
    state: z.enum(['starting', 'ready', 'down']),
    name: z.string().nullable(),
    version: z.string().nullable(),
    pid: z.number().int().nullable(),
    load_session: z.boolean(),
    steering: z.boolean(),
  }),
  /** The run holding the intern's turn lock, if any. */
  turn: z.object({ run_id: z.string(), session_id: SessionId }).nullable(),
  runs: z.array(RunSummary),
  sessions: z.number().int(),
  limits: z.object({
    interaction_deadline_ms: z.number().int(),
    replay_buffer_events: z.number().int(),
    max_paused_runs: z.number().int(),
    keepalive_ms: z.number().int(),
  }),
  uptime_ms: z.number().int(),
});
export type StatusResponse = z.infer<typeof StatusResponse>;

// ---- refusals ----
/**
 * Every non-2xx answer. Same shape as the chat route's
 * (docs/reference/intern-chat.md#statuses-and-reasons), so the gateway can forward it unchanged.
 * `metadata` is absent only on 401 (wrong or missing daemon secret). `busy` refusals also carry a
 * `Retry-After` header (seconds).
 */
export const RefusalBody = z.object({
  error: z.object({
    code: z.number().int(),
    message: z.string(),
    metadata: z.object({ reason: Reason, retryable: z.boolean() }).optional(),
  }),
});
export type RefusalBody = z.infer<typeof RefusalBody>;

export function refusalBody(kind: RefusalKind, message: string): RefusalBody {
  const r = REFUSALS[kind];
  return {
    error: { code: r.status, message, ...(r.reason ? { metadata: { reason: r.reason, retryable: r.retryable } } : {}) },
  };
}

// ---- stream events (SSE `data:` lines; SSE `id:` = seq) ----
/** The usage object (docs/reference/intern-chat.md#stream-chunks), as the agent reported it: the
 * OpenAI usage's token counts and cost (what a provider says beyond them stays with the agent). */
export const Usage = OpenAIUsage.pick({
  prompt_tokens: true,
  completion_tokens: true,
  total_tokens: true,
  cost: true,
  prompt_tokens_details: true,
});
export type Usage = z.infer<typeof Usage>;

export const FieldDescriptor = z.object({
  name: z.string(),
  type: z.string(),
  required: z.boolean(),
  options: z.array(z.string()),
});
export type FieldDescriptor = z.infer<typeof FieldDescriptor>;

export const Interaction = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('permission'),
    operation: z.string().nullable(),
    options: z.array(PermissionOptionKind),
    // cohort's extension (docs/isolation.md): what will run, as the agent describes it, and where.
    title: z.string().nullable(),
    input: z.record(z.string(), z.unknown()).nullable(),
    sandbox: z.enum(['inner', 'escalated']).nullable(),
  }),
  z.object({ kind: z.literal('elicitation'), message: z.string(), fields: z.array(FieldDescriptor) }),
]);
export type Interaction = z.infer<typeof Interaction>;

const seq = z.number().int().positive();

/** One of the agent's tool calls as the chat stream's `cohort_tool` carries it and the daemon's
 * `tool` event reports it (docs/reference/tool-events.md). */
export const ToolActivity = z.object({
  id: z.string(),
  title: z.string().nullable(),
  kind: z.string().nullable(),
  status: z.enum(['pending', 'in_progress', 'completed', 'failed']).nullable(),
  input: z.string().nullable(),
  output: z.string().nullable(),
});
export type ToolActivity = z.infer<typeof ToolActivity>;
/** A tool call's input or output beyond this many characters keeps its head (input) or tail (output). */
export const TOOL_TEXT_LIMIT = 16_000;

export const RunEvent = z.discriminatedUnion('type', [
  /** Always seq 1: the run and the session it belongs to. */
  z.object({ seq, type: z.literal('run'), run_id: z.string(), session_id: SessionId, approval_mode: ApprovalMode }),
  /** The model identifier as the agent reports it; sent when it first appears or changes. */
  z.object({ seq, type: z.literal('model'), model: z.string() }),
  z.object({ seq, type: z.literal('text'), text: z.string() }),
  z.object({ seq, type: z.literal('reasoning'), text: z.string() }),
  /** Latest usage of this run as reported by the agent (cumulative within the run). */
  z.object({ seq, type: z.literal('usage'), usage: Usage }),
  /** The run paused: the daemon ends the stream right after this event. */
  z.object({
    seq,
    type: z.literal('interaction'),
    interaction_id: InteractionId,
    interaction: Interaction,
    deadline_at: z.string(),
  }),
  /** cohort's extension (docs/reference/tool-events.md): one of the agent's tool calls (a command,
   * a file edit, a fetch) as it starts and as it changes; on a later event of the same id a null
   * field is unchanged. `input` and `output` are bounded (TOOL_TEXT_LIMIT). */
  ToolActivity.extend({ seq, type: z.literal('tool') }),
  /** A steering message was delivered into this run (its effect follows in later events). */
  z.object({ seq, type: z.literal('steered'), text: z.string() }),
  // -- terminal events: exactly one per run, always the last --
  z.object({
    seq,
    type: z.literal('completed'),
    stop_reason: z.string(),
    usage: Usage.nullable(),
    model: z.string().nullable(),
  }),
  z.object({
    seq,
    type: z.literal('failed'),
    reason: Reason,
    /** The HTTP status the failure would have had before a stream opened (`code`,
     * docs/reference/intern-chat.md#stream-chunks). */
    status: z.number().int(),
    message: z.string(),
    retryable: z.boolean(),
    /** True when the agent produced no text, reasoning or interaction before failing. */
    before_output: z.boolean(),
    retry_after_seconds: z.number().int().optional(),
    usage: Usage.nullable(),
  }),
  /** The agent confirmed an ending: by cancellation (request or client gone) or interaction deadline. */
  z.object({
    seq,
    type: z.literal('ended'),
    cause: z.enum(['cancelled', 'deadline']),
    message: z.string(),
    usage: Usage.nullable(),
  }),
]);
export type RunEvent = z.infer<typeof RunEvent>;
export type RunEventType = RunEvent['type'];
/** An event before its seq is assigned (what the run produces). */
export type RunEventBody = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, 'seq'> : never) : never;

export const TERMINAL_EVENTS = ['completed', 'failed', 'ended'] as const satisfies readonly RunEventType[];
export function isTerminal(e: Pick<RunEvent, 'type'>): boolean {
  return (TERMINAL_EVENTS as readonly string[]).includes(e.type);
}

/** Events after which the daemon closes the stream (the run is paused or over). */
export function endsStream(e: Pick<RunEvent, 'type'>): boolean {
  return e.type === 'interaction' || isTerminal(e);
}

const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

/** Parses one SSE `data:` payload from the daemon. Text and reasoning, nearly every event of a
 * run, are checked by hand against the same rules as their schemas (daemon.test.ts holds the two
 * to the same answers); every other event goes through the schema. */
export function parseRunEvent(data: string): RunEvent {
  const v = JSON.parse(data) as { type?: unknown; text?: unknown; seq?: unknown } | null;
  if (v && (v.type === 'text' || v.type === 'reasoning') && typeof v.text === 'string' && isSeq(v.seq))
    return { seq: v.seq, type: v.type, text: v.text };
  return RunEvent.parse(v);
}

/** SSE framing of one event, as the daemon writes it. */
export const formatRunEvent = (e: RunEvent): string => dataFrame(e, e.seq);

/** rlimits for an intern's agent and everything it starts, as the provisioner passes them to its daemon (COHORT_AGENT_LIMITS). */
export type AgentLimits = { processes: number; memoryMb: number; fileMb: number; openFiles: number };
