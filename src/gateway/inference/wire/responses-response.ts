// The router's OpenAI chat-completions output as OpenAI Responses API output: a completion as a
// `response` object, and chat chunks as the Responses event stream (response.created,
// response.in_progress, output items with their content parts and deltas, then
// response.completed, response.incomplete or response.failed). Text, reasoning and each tool
// call are output items of their own, a new item at each change of kind, in the order produced.
// Reasoning is a `reasoning_text` part, or, when the request asked for a summary
// (`reasoning.summary`), a `summary_text` part with the reasoning_summary events Codex reads
// (docs/guides/model-requests.md#reasoning-thinking-and-effort). Pure; the encoder keeps per-response state. May import: ../types.ts.
import { eventFrame } from '../../../shared/sse/write.ts';
import {
  PARTS,
  type ChatChunk,
  type Completion,
  type FinishReason,
  type Part,
  type ServerToolStep,
  type Usage,
} from '../types.ts';

/** The request fields a `response` object repeats back, as the client sent them. */
export type Echo = {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, unknown> | null;
  parallel_tool_calls: boolean;
  reasoning: unknown;
  temperature: number | null;
  text: unknown;
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  user?: string;
};

export function echoOf(body: Record<string, unknown>): Echo {
  const or = <T>(k: string, dflt: T): T => (body[k] ?? dflt) as T;
  return {
    instructions: or('instructions', null),
    max_output_tokens: or('max_output_tokens', null),
    metadata: or('metadata', null),
    parallel_tool_calls: or('parallel_tool_calls', true),
    reasoning: or('reasoning', null),
    temperature: or('temperature', null),
    text: or('text', { format: { type: 'text' } }),
    tool_choice: or('tool_choice', 'auto'),
    tools: or('tools', []),
    top_p: or('top_p', null),
    ...(typeof body.user === 'string' ? { user: body.user } : {}),
  };
}

/** Who the response is: `resp_` and the request's id (the request log's key); items are numbered under it. */
export type ResponseIdentity = { requestId: string; model: string; createdAt: number; echo: Echo };

export const responseId = (requestId: string) => `resp_${requestId}`;
const itemId = (prefix: 'msg' | 'rs' | 'fc' | 'st', requestId: string, index: number) =>
  `${prefix}_${requestId}_${index}`;

type Status = 'in_progress' | 'completed' | 'incomplete';
type ResponseError = { code: string; message: string; metadata?: { reason: string; retryable: boolean } };

export function responsesUsage(u: Usage | null | undefined) {
  const details = u?.prompt_tokens_details as { cached_tokens?: number; cache_write_tokens?: number } | undefined;
  return {
    input_tokens: u?.prompt_tokens ?? 0,
    input_tokens_details: {
      cached_tokens: details?.cached_tokens ?? 0,
      cache_write_tokens: details?.cache_write_tokens ?? 0,
    },
    output_tokens: u?.completion_tokens ?? 0,
    output_tokens_details: { reasoning_tokens: u?.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u?.total_tokens ?? 0,
    ...(u?.cost !== undefined ? { cost: u.cost, is_byok: u.is_byok } : {}),
  };
}

/** A finish other than stop or tool calls leaves the response incomplete, saying why. */
function statusOf(finish: FinishReason | null): { status: Status; incomplete_details: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

const outputText = (text: string) => ({ type: 'output_text' as const, text, annotations: [], logprobs: [] });
const reasoningText = (text: string) => ({ type: 'reasoning_text' as const, text });
const summaryText = (text: string) => ({ type: 'summary_text' as const, text });
const messageItem = (id: string, text: string, status: Status) => ({
  id,
  type: 'message' as const,
  status,
  role: 'assistant' as const,
  content: [outputText(text)],
});
const reasoningItem = (id: string, text: string, summarized: boolean) =>
  summarized
    ? { id, type: 'reasoning' as const, summary: [summaryText(text)], content: [] }
    : { id, type: 'reasoning' as const, summary: [], content: [reasoningText(text)] };
/** Whether the request asked for a reasoning summary (auto, concise or detailed). */
const summarizedFor = (echo: Echo) => {
  const summary = (echo.reasoning as { summary?: unknown } | null)?.summary;
  return typeof summary === 'string';
};
const callItem = (id: string, c: { call_id: string; name: string; arguments: string }, status: Status) => ({
  id,
  type: 'function_call' as const,
  status,
  call_id: c.call_id,
  name: c.name,
  arguments: c.arguments,
});
/** A server tool the gateway ran (docs/guides/server-tools.md): an item whose type is the tool's. */
const stepItem = (id: string, step: ServerToolStep) => ({
  id,
  type: step.tool_name as `service:${string}`,
  status: step.status,
  call_id: step.tool_call_id,
  arguments: step.arguments,
  output: step.result,
  ...(step.images ? { images: step.images } : {}),
});
type Item =
  | ReturnType<typeof messageItem>
  | ReturnType<typeof reasoningItem>
  | ReturnType<typeof callItem>
  | ReturnType<typeof stepItem>;

const textOf = (output: Item[]) => output.map((i) => (i.type === 'message' ? i.content[0]!.text : '')).join('');

function envelope(
  who: ResponseIdentity,
  s: {
    status: Status | 'failed';
    output: Item[];
    usage: Usage | null;
    error?: ResponseError | null;
    incomplete?: { reason: string } | null;
  },
) {
  const done = s.status !== 'in_progress';
  return {
    id: responseId(who.requestId),
    object: 'response' as const,
    created_at: who.createdAt,
    status: s.status,
    completed_at: s.status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error: s.error ?? null,
    incomplete_details: s.incomplete ?? null,
    instructions: who.echo.instructions,
    max_output_tokens: who.echo.max_output_tokens,
    model: who.model,
    output: s.output,
    output_text: textOf(s.output),
    parallel_tool_calls: who.echo.parallel_tool_calls,
    previous_response_id: null,
    reasoning: who.echo.reasoning,
    // Nothing is stored (README): a client must not expect to refer to this response later.
    store: false,
    temperature: who.echo.temperature,
    text: who.echo.text,
    tool_choice: who.echo.tool_choice,
    tools: who.echo.tools,
    top_p: who.echo.top_p,
    truncation: 'disabled',
    usage: done ? responsesUsage(s.usage) : null,
    ...(who.echo.user !== undefined ? { user: who.echo.user } : {}),
    metadata: who.echo.metadata ?? {},
  };
}

/** A completion's text and reasoning in the order produced where the provider says it, else the reasoning first. */
function partsOf(m: Completion['choices'][number]['message'] | undefined): Part[] {
  return (
    m?.[PARTS] ?? [
      ...(m?.reasoning ? [{ kind: 'thinking' as const, text: m.reasoning }] : []),
      ...(m?.content ? [{ kind: 'text' as const, text: m.content }] : []),
    ]
  );
}

export function toResponse(c: Completion, who: ResponseIdentity) {
  const choice = c.choices[0];
  const parts = partsOf(choice?.message);
  const output: Item[] = parts.map((p, i) =>
    p.kind === 'tool'
      ? stepItem(itemId('st', who.requestId, i), p.step)
      : p.kind === 'thinking'
        ? reasoningItem(itemId('rs', who.requestId, i), p.text, summarizedFor(who.echo))
        : messageItem(itemId('msg', who.requestId, i), p.text, 'completed'),
  );
  for (const t of choice?.message.tool_calls ?? [])
    output.push(callItem(itemId('fc', who.requestId, output.length), { call_id: t.id, ...t.function }, 'completed'));
  const { status, incomplete_details } = statusOf(choice?.finish_reason ?? null);
  return envelope(who, { status, output, usage: c.usage ?? null, incomplete: incomplete_details });
}

/** The code of a failure after the stream opened: OpenAI's names for the two kinds a client can act on. */
const errorCode = (status: number) => (status === 429 ? 'rate_limit_exceeded' : 'server_error');

type OpenText = { kind: 'message' | 'reasoning'; index: number; id: string; text: string };
type OpenCall = { index: number; id: string; call_id: string; name: string; arguments: string };

/** Turns one response's chunks into Responses SSE text: `start()` opens it, `end()` closes it,
 * `error()` ends it failed. Each event carries the next sequence number. */
export function responsesEncoder(who: ResponseIdentity) {
  let seq = 0;
  let out = '';
  const output: Item[] = [];
  let text: OpenText | null = null;
  const calls = new Map<number, OpenCall>();
  let finish: FinishReason | null = null;
  let usage: Usage | null = null;
  const summarized = summarizedFor(who.echo);

  const emit = (type: string, data: object) => {
    out += eventFrame(type, { type, ...data, sequence_number: seq++ });
  };
  const flush = () => {
    const s = out;
    out = '';
    return s;
  };
  const textItem = (t: OpenText, status: Status) =>
    t.kind === 'message' ? messageItem(t.id, t.text, status) : reasoningItem(t.id, t.text, summarized);
  const partOf = (t: OpenText) =>
    t.kind === 'message' ? outputText(t.text) : summarized ? summaryText(t.text) : reasoningText(t.text);
  const callOf = (c: OpenCall, status: Status) => callItem(c.id, c, status);

  const closeText = () => {
    if (!text) return;
    const t = text;
    const at = { item_id: t.id, output_index: t.index, content_index: 0 };
    if (t.kind === 'message') emit('response.output_text.done', { ...at, text: t.text, logprobs: [] });
    else if (summarized) {
      const in_ = { item_id: t.id, output_index: t.index, summary_index: 0 };
      emit('response.reasoning_summary_text.done', { ...in_, text: t.text });
      emit('response.reasoning_summary_part.done', { ...in_, part: partOf(t) });
    } else emit('response.reasoning_text.done', { ...at, text: t.text });
    if (t.kind === 'message' || !summarized) emit('response.content_part.done', { ...at, part: partOf(t) });
    output[t.index] = textItem(t, 'completed');
    emit('response.output_item.done', { output_index: t.index, item: output[t.index] });
    text = null;
  };
  const openText = (kind: OpenText['kind']) => {
    if (text?.kind === kind) return text;
    closeText();
    const index = output.length;
    text = { kind, index, id: itemId(kind === 'message' ? 'msg' : 'rs', who.requestId, index), text: '' };
    const empty =
      kind === 'message'
        ? { id: text.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] }
        : { id: text.id, type: 'reasoning', summary: [], content: [] };
    output[index] = textItem(text, 'in_progress');
    emit('response.output_item.added', { output_index: index, item: empty });
    if (kind === 'reasoning' && summarized)
      emit('response.reasoning_summary_part.added', {
        item_id: text.id,
        output_index: index,
        summary_index: 0,
        part: partOf(text),
      });
    else
      emit('response.content_part.added', {
        item_id: text.id,
        output_index: index,
        content_index: 0,
        part: partOf(text),
      });
    return text;
  };
  const closeCalls = () => {
    for (const c of calls.values()) {
      emit('response.function_call_arguments.done', {
        item_id: c.id,
        output_index: c.index,
        name: c.name,
        arguments: c.arguments,
      });
      output[c.index] = callOf(c, 'completed');
      emit('response.output_item.done', { output_index: c.index, item: output[c.index] });
    }
    calls.clear();
  };
  /** What was produced so far, open items marked incomplete (for a failed response). */
  const snapshot = (): Item[] => {
    const items = [...output];
    if (text) items[text.index] = textItem(text, 'incomplete');
    for (const c of calls.values()) items[c.index] = callOf(c, 'incomplete');
    return items;
  };

  return {
    start(): string {
      const response = envelope(who, { status: 'in_progress', output: [], usage: null });
      emit('response.created', { response });
      emit('response.in_progress', { response });
      return flush();
    },
    push(c: ChatChunk): string {
      if (c.usage) usage = c.usage;
      const choice = c.choices[0];
      if (!choice) return flush();
      const d = choice.delta;
      for (const step of d.reasoning_details ?? []) {
        closeText();
        const index = output.length;
        output[index] = stepItem(itemId('st', who.requestId, index), step);
        emit('response.output_item.added', { output_index: index, item: { ...output[index], status: 'in_progress' } });
        emit('response.output_item.done', { output_index: index, item: output[index] });
      }
      if (d.reasoning) {
        const t = openText('reasoning');
        t.text += d.reasoning;
        if (summarized)
          emit('response.reasoning_summary_text.delta', {
            item_id: t.id,
            output_index: t.index,
            summary_index: 0,
            delta: d.reasoning,
          });
        else
          emit('response.reasoning_text.delta', {
            item_id: t.id,
            output_index: t.index,
            content_index: 0,
            delta: d.reasoning,
          });
      }
      if (d.content) {
        const t = openText('message');
        t.text += d.content;
        emit('response.output_text.delta', {
          item_id: t.id,
          output_index: t.index,
          content_index: 0,
          delta: d.content,
          logprobs: [],
        });
      }
      for (const tc of d.tool_calls ?? []) {
        let call = calls.get(tc.index);
        if (!call && tc.id) {
          closeText();
          const index = output.length;
          call = {
            index,
            id: itemId('fc', who.requestId, index),
            call_id: tc.id,
            name: tc.function?.name ?? '',
            arguments: '',
          };
          calls.set(tc.index, call);
          output[index] = callOf(call, 'in_progress');
          emit('response.output_item.added', { output_index: index, item: output[index] });
        }
        const args = tc.function?.arguments;
        if (call && args) {
          call.arguments += args;
          emit('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: args });
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
      return flush();
    },
    end(): string {
      closeText();
      closeCalls();
      const { status, incomplete_details } = statusOf(finish);
      const response = envelope(who, { status, output: [...output], usage, incomplete: incomplete_details });
      emit(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
      return flush();
    },
    error(e: { status: number; message: string; reason?: string; retryable: boolean }): string {
      const error: ResponseError = {
        code: errorCode(e.status),
        message: e.message,
        ...(e.reason ? { metadata: { reason: e.reason, retryable: e.retryable } } : {}),
      };
      emit('response.failed', { response: envelope(who, { status: 'failed', output: snapshot(), usage, error }) });
      return flush();
    },
  };
}
