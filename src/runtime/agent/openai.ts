// One streamed OpenAI chat-completions call: deltas are handed out as they arrive, the assembled
// assistant message, usage and model id come back at the end. Failures are values with a
// retryable classification (`turn_failed`, docs/guides/interns.md); the API key never appears in them.
import { z } from 'zod';
import { SseDecoder } from '../../shared/sse/read.ts';
import { type ChatMessage, ChunkToolCall, type ToolCall, Usage } from '../../shared/openai.ts';

/** The messages of the agent's conversations: plain text, of the shared wire shape. */
export type ConversationMessage = ChatMessage &
  (
    | { role: 'system' | 'user'; content: string }
    | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
    | { role: 'tool'; tool_call_id: string; content: string }
  );

export type ChatResult = {
  message: Extract<ConversationMessage, { role: 'assistant' }>;
  usage: Usage | null;
  model: string | null;
};

/** A failed model call, classified for `turn_failed` (docs/reference/intern-chat.md#statuses-and-reasons;
 * the key never appears in it). */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export type ChatCallOptions = {
  baseUrl: string;
  apiKey: string;
  body: Record<string, unknown>;
  signal: AbortSignal;
  onContent(text: string, model: string | null): void;
  onReasoning(text: string, model: string | null): void;
};

const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);

/** A field read as it is where it has its type, as absent where it has another: an endpoint
 * (any OpenAI-compatible one) is taken at its word where its word has the right type, and
 * otherwise not at all. */
const lenient = <T extends z.ZodType>(t: T) => t.optional().catch(undefined);

const ErrorObject = z.object({
  code: z.unknown().optional(),
  message: z.unknown().optional(),
  metadata: lenient(z.object({ retryable: z.unknown().optional() })),
});
type ErrorObject = z.infer<typeof ErrorObject>;
const ErrorBody = z.object({ error: lenient(ErrorObject) });

/** An endpoint's own classification when it gives one, else the status's. */
function retryableOf(status: number, error: ErrorObject | undefined): boolean {
  const said = error?.metadata?.retryable;
  return typeof said === 'boolean' ? said : RETRYABLE_STATUS.has(status) || status >= 500;
}

/**
 * A refused call as a failure. An endpoint that classifies its own failures (cohort's model
 * route, OpenRouter: `error.metadata.retryable`) is believed, so a 502 wrapping a provider's
 * malformed answer stays not retryable; otherwise the status decides.
 */
export function failureOf(status: number, text: string): ModelCallError {
  let body: z.infer<typeof ErrorBody> | undefined;
  try {
    body = ErrorBody.safeParse(JSON.parse(text)).data;
  } catch {
    // not JSON: the text itself is the detail
  }
  const message = body?.error?.message;
  const detail = typeof message === 'string' ? message : text;
  return new ModelCallError(
    `model endpoint answered ${status}: ${detail.slice(0, 300)}`,
    status,
    retryableOf(status, body?.error),
  );
}

/** An error chunk after the stream opened (`finish_reason: "error"`): the turn fails, not completes. */
export function streamFailureOf(error: ErrorObject): ModelCallError {
  const status = typeof error.code === 'number' ? error.code : 502;
  const detail = typeof error.message === 'string' ? error.message : 'no message';
  return new ModelCallError(
    `model stream failed (${status}): ${detail.slice(0, 300)}`,
    status,
    retryableOf(status, error),
  );
}

/** A chunk as read from the endpoint: the parts of the shared shape (ChatChunk) the agent reads,
 * with nothing taken for granted. */
const Chunk = z.object({
  model: lenient(z.string()),
  // What the agent sums (usage.ts): a provider's other fields, in whatever shape, are not read.
  usage: lenient(
    Usage.pick({
      prompt_tokens: true,
      completion_tokens: true,
      total_tokens: true,
      cost: true,
      prompt_tokens_details: true,
    }).nullable(),
  ),
  error: lenient(ErrorObject),
  choices: lenient(
    z.array(
      z.object({
        delta: lenient(
          z.object({
            content: lenient(z.string().nullable()),
            reasoning: lenient(z.string().nullable()),
            tool_calls: lenient(z.array(ChunkToolCall)),
          }),
        ),
      }),
    ),
  ),
});

export async function streamChat(opts: ChatCallOptions): Promise<ChatResult> {
  let res: Response;
  try {
    res = await fetch(`${opts.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${opts.apiKey}`,
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ ...opts.body, stream: true, stream_options: { include_usage: true } }),
      signal: opts.signal,
    });
  } catch (err) {
    if (opts.signal.aborted) throw err;
    throw new ModelCallError(
      `model endpoint unreachable: ${(err as Error).cause ?? (err as Error).message}`,
      null,
      true,
    );
  }
  if (!res.ok) throw failureOf(res.status, await res.text().catch(() => ''));
  let content = '';
  let model: string | null = null;
  let usage: Usage | null = null;
  const calls: ToolCall[] = [];
  let failed: ModelCallError | null = null;
  // Deltas that arrived in one network read go out as one update per kind run: same text, in
  // order, without an ACP message per token when the model is fast.
  let held: { kind: 'content' | 'reasoning'; text: string } | null = null;
  const flush = () => {
    if (held?.kind === 'content') opts.onContent(held.text, model);
    else if (held) opts.onReasoning(held.text, model);
    held = null;
  };
  const hold = (kind: 'content' | 'reasoning', text: string) => {
    if (held && held.kind !== kind) flush();
    held = held ? { kind, text: held.text + text } : { kind, text };
  };
  const parser = new SseDecoder((data) => {
    if (data === '[DONE]') return;
    const chunk = Chunk.safeParse(JSON.parse(data)).data;
    // Not an object: nothing of a chunk in it.
    if (!chunk) return;
    if (chunk.error) failed ??= streamFailureOf(chunk.error);
    if (chunk.model && chunk.model !== model) flush();
    model = chunk.model ?? model;
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices?.[0]?.delta;
    if (delta?.reasoning) hold('reasoning', delta.reasoning);
    if (delta?.content) {
      content += delta.content;
      hold('content', delta.content);
    }
    for (const tc of delta?.tool_calls ?? []) {
      const c = (calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) c.id = tc.id;
      c.function.name += tc.function?.name ?? '';
      c.function.arguments += tc.function?.arguments ?? '';
    }
  });
  try {
    for await (const bytes of res.body ?? []) {
      parser.feed(bytes as Uint8Array);
      flush();
    }
  } catch (err) {
    if (opts.signal.aborted) throw err;
    throw new ModelCallError(`model stream broke: ${(err as Error).message}`, null, true);
  }
  if (failed) throw failed;
  const toolCalls = calls.filter(Boolean);
  return {
    message: {
      role: 'assistant',
      content: content === '' && toolCalls.length ? null : content,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    },
    usage,
    model,
  };
}
