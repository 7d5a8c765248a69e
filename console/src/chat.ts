// Intern chat as the console keeps it: sessions of turns, each turn a list of parts built from the
// stream's chunks (applyChunk, pure but for mutating the turn it is given), and the transport
// that streams a turn, steers it and answers its questions (docs/reference/intern-chat.md).
import { ApiProblem, problemOf, request, type Problem } from './api.ts';
import { isChunk, isInteraction } from './wire.ts';
import { SseDecoder } from '../../src/shared/sse/read.ts';
import type { ToolActivity } from '../../src/shared/daemon-protocol.ts';
import type { Usage } from '../../src/shared/openai.ts';
import type { InternChunk } from '../../src/gateway/interns/chat.schemas.ts';

export type ApprovalMode = 'manual' | 'self-drive';
export type ToolCall = { index: number; id: string; type: 'function'; function: { name: string; arguments: string } };
export type PermissionArgs = {
  kind: 'permission';
  operation: string | null;
  options: string[];
  title?: string | null;
  input?: unknown;
  sandbox?: string | null;
};
export type QuestionField = {
  name: string;
  type: string;
  required: boolean;
  options: string[];
  title?: string;
  description?: string;
};
export type QuestionArgs = { kind: 'elicitation'; message: string; fields: QuestionField[] };
/** One of the agent's tool calls, as the `cohort_tool` extension reports it (docs/reference/tool-events.md). */
export type ToolEvent = ToolActivity;
export type { Usage };

export type Part =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'interaction'; call: ToolCall; args: PermissionArgs | QuestionArgs; answer?: string }
  | { type: 'steer'; text: string }
  | { type: 'tool'; tool: ToolEvent }
  | { type: 'error'; problem: Problem };

/** interrupted: the page went away while the turn streamed, which cancels the run
 * (docs/reference/intern-chat.md#run-states). */
export type TurnStatus = 'streaming' | 'paused' | 'done' | 'failed' | 'interrupted';
export type ChatBody = { stream: true; session_id: string; approval_mode?: ApprovalMode; messages: unknown[] };
/** `rev` changes with every chunk, so a finished turn's view can skip re-rendering. `last` is the
 * request that produced the latest part, resent by Retry. */
export type Turn = {
  id: string;
  prompt: string;
  mode: ApprovalMode;
  parts: Part[];
  status: TurnStatus;
  usage?: Usage | null;
  model?: string;
  last: ChatBody;
  rev: number;
};
export type Session = { id: string; title: string; updated: number; turns: Turn[] };

/** What the console reads of a chunk: the wire contract's own type (the gateway's schema), less
 * the fields it does not read, so a test's chunk may leave those out. */
type Choice = InternChunk['choices'][number];
export type Chunk = Partial<Pick<InternChunk, 'model' | 'error' | 'session_id' | 'usage' | 'cohort_tool'>> & {
  choices: Pick<Choice, 'delta' | 'finish_reason'>[];
};

/** The model field names the intern's runtime model, or `service/intern` on the API's own chunks. */
const API_MODEL = 'service/intern';

function append(turn: Turn, type: 'text' | 'reasoning', text: string) {
  const last = turn.parts[turn.parts.length - 1];
  if (last?.type === type) last.text += text;
  else turn.parts.push({ type, text });
}

function parseArgs(raw: string): PermissionArgs | QuestionArgs {
  let args: unknown;
  try {
    args = JSON.parse(raw);
  } catch {}
  return isInteraction(args)
    ? args
    : { kind: 'permission', operation: null, options: [], title: 'The intern asked for input the console cannot read' };
}

/** A tool call's first event adds its block; later ones change the fields they carry. */
function tool(turn: Turn, e: ToolEvent) {
  const part = turn.parts.find((p): p is Extract<Part, { type: 'tool' }> => p.type === 'tool' && p.tool.id === e.id);
  if (!part) return void turn.parts.push({ type: 'tool', tool: { ...e } });
  const t = part.tool;
  for (const k of ['title', 'kind', 'status', 'input', 'output'] as const) if (e[k] !== null) (t[k] as unknown) = e[k];
}

export function applyChunk(turn: Turn, c: Chunk) {
  turn.rev++;
  if (c.model && c.model !== API_MODEL) turn.model = c.model;
  const choice = c.choices[0];
  if (!choice) {
    if (c.usage !== undefined) turn.usage = c.usage;
    return;
  }
  if (c.cohort_tool) tool(turn, c.cohort_tool);
  const d = choice.delta;
  if (d.reasoning) append(turn, 'reasoning', d.reasoning);
  if (d.content) append(turn, 'text', d.content);
  for (const call of d.tool_calls ?? [])
    turn.parts.push({ type: 'interaction', call, args: parseArgs(call.function.arguments) });
  if (choice.finish_reason === 'stop') turn.status = 'done';
  else if (choice.finish_reason === 'tool_calls') turn.status = 'paused';
  else if (choice.finish_reason === 'error') {
    turn.status = 'failed';
    const e = c.error;
    turn.parts.push({
      type: 'error',
      problem: {
        status: e?.code ?? 502,
        message: e?.message ?? 'the turn failed',
        reason: e?.metadata.reason,
        retryable: e?.metadata.retryable ?? false,
        fields: {},
      },
    });
  }
}

/** A stream that stops without a finish (the connection broke): what the gateway would call it. */
export const severed = (message: string): Problem => ({
  status: 502,
  message,
  reason: 'stream_severed',
  retryable: true,
  fields: {},
});

/** The gateway writes a keepalive after 30 s of silence; twice that without a byte is a dead connection. */
export const SILENCE_MS = 60_000;
/** Before its first output a turn's answer is held (so a refusal can still be a status), with no
 * keepalive; the gateway answers within its route deadline, 300 s, with a 408 past it
 * (docs/reference/intern-chat.md#limits). A turn that is slow to start (an agent's cold start on
 * a busy host, a model that thinks before it speaks) is waited for that long, and 30 s more. */
export const ANSWER_MS = 330_000;

/** Streams one request. `open` runs when a stream starts (a steer that arrives after its turn
 * ended starts a turn of its own); `read` once per network read, after its chunks were applied,
 * so a batch of chunks costs one render. Resolves 'steered' for a 202, 'ended' after `[DONE]`; a
 * refusal, a broken or silent connection rejects with ApiProblem. */
export async function streamChat(
  internId: string,
  body: ChatBody,
  on: { open?: () => void; chunk: (c: Chunk) => void; read: () => void },
  signal?: AbortSignal,
  limits: { silenceMs: number; answerMs: number } = { silenceMs: SILENCE_MS, answerMs: ANSWER_MS },
): Promise<'ended' | 'steered'> {
  const { silenceMs, answerMs } = limits;
  const silence = new AbortController();
  const both = signal ? AbortSignal.any([signal, silence.signal]) : silence.signal;
  let waited = answerMs;
  let timer = setTimeout(() => silence.abort(), answerMs);
  const alive = () => {
    clearTimeout(timer);
    waited = silenceMs;
    timer = setTimeout(() => silence.abort(), silenceMs);
  };
  try {
    const res = await request('POST', `/interns/${encodeURIComponent(internId)}/chat/completions`, body, {
      signal: both,
      headers: { 'x-cohort-tool-events': '1' },
    });
    if (res.status === 202) return 'steered';
    if (!res.ok || !res.body) throw new ApiProblem(await problemOf(res));
    alive();
    on.open?.();
    let done = false;
    const sse = new SseDecoder((data) => {
      if (data === '[DONE]') done = true;
      else {
        const chunk: unknown = JSON.parse(data);
        if (!isChunk(chunk)) throw new ApiProblem(severed('the gateway sent a chunk the console cannot read'));
        on.chunk(chunk);
      }
    }, alive);
    const reader = res.body.getReader();
    for (;;) {
      const { value, done: closed } = await reader.read();
      if (closed) break;
      alive();
      sse.feed(value);
      on.read();
    }
    if (!done) throw new ApiProblem(severed('the connection to the gateway closed before the turn finished'));
    return 'ended';
  } catch (e) {
    if (silence.signal.aborted)
      throw new ApiProblem(severed(`nothing came from the gateway for ${waited / 1000} seconds, not even a keepalive`));
    if (e instanceof ApiProblem || signal?.aborted) throw e;
    throw new ApiProblem(
      severed(`the connection to the gateway was lost (${e instanceof Error ? e.message : String(e)})`),
    );
  } finally {
    clearTimeout(timer);
  }
}

export const promptBody = (session: string, prompt: string, mode: ApprovalMode): ChatBody => ({
  stream: true,
  session_id: session,
  approval_mode: mode,
  messages: [{ role: 'user', content: prompt }],
});

/** A reply echoes the streamed tool call before the `tool` message (docs/reference/intern-chat.md#the-request). */
export const answerBody = (session: string, call: ToolCall, content: string): ChatBody => ({
  stream: true,
  session_id: session,
  messages: [
    { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] },
    { role: 'tool', tool_call_id: call.id, content },
  ],
});

/** Words for a refusal, by reason; the server's own message follows them. */
const WORDS: Record<string, string> = {
  busy: 'Another turn is running on this intern.',
  intern_not_ready: 'The intern is not running. Provision it on the Interns screen, then retry.',
  intern_unreachable: 'The intern could not be reached.',
  intern_rejected: 'The intern rejected the request.',
  turn_failed: 'The intern could not run the turn.',
  stream_severed: 'The connection to the intern broke before the turn finished.',
  run_ended: 'The intern ended the run.',
  timeout: 'The intern did not answer in time.',
  rate_limited: 'Too many turns right now.',
  interaction_not_pending: 'That question is no longer waiting: its run has ended. Send a new prompt.',
  interaction_unknown: 'The intern no longer knows that question (it may have restarted). Send a new prompt.',
  attachment_failed: 'The paused run cannot be resumed from here.',
  not_found: 'This intern does not exist (or is not visible to this key).',
  payload_too_large: 'The message is too large (at most 1 MiB).',
  bad_request: 'The request was refused.',
  client_closed_request: 'The request was closed.',
};

export const inWords = (p: Problem) =>
  (p.reason && WORDS[p.reason]) ?? (p.status === 0 ? 'The gateway could not be reached.' : 'The request failed.');
