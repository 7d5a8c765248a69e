// Adapter for every provider that speaks OpenAI chat completions (openai, groq, together,
// deepinfra, fireworks, mistral, xai, deepseek, cerebras, ollama, vLLM, …): the request goes as
// is with the provider's model id; streams ask for usage in the last chunk.
// May import: ../http.ts, ../../types.ts.
import { failure, jsonBody, post, type HttpClient } from '../http.ts';
import { type Reasoning, reasoningEffort } from '../options.ts';
import {
  UpstreamError,
  WIRE_TAIL,
  type ChatChunk,
  type Completion,
  type ProviderAdapter,
  type UpstreamCall,
} from '../../types.ts';

const headersFor = (apiKey: string | null): Record<string, string> =>
  apiKey ? { authorization: `Bearer ${apiKey}` } : {};

/** The layout OpenAI, vLLM, Ollama, Groq and the rest send: id, object, created, model, then the rest. */
const USUAL_HEAD = /^\{"id":"[^"\\]*","object":"chat\.completion\.chunk","created":(\d+),"model":"[^"\\]*",/;

/** A key the relay reads (a finish, usage, an error) with a value other than null. A quote inside
 * a JSON string is escaped, so `"usage":` can only be a key: a chunk without a match is a delta. */
const READ_KEYS = /"(?:finish_reason|usage|error)"\s*:\s*[^n\s]/;
/** Left to parseChunk to refuse: a chunk with no choices, or not ending in `}`. */
const CHOICES = /"choices"\s*:\s*\[/;
const NO_CHOICES: ChatChunk['choices'] = Object.freeze([]) as unknown as ChatChunk['choices'];

/** A delta in the usual layout, when nobody reads its content: its text without parsing it (an
 * upstream sends hundreds per response; JSON.parse was most of the gateway's time per chunk). */
function unparsed(data: string): ChatChunk | null {
  const head = USUAL_HEAD.exec(data);
  if (!head || READ_KEYS.test(data) || !CHOICES.test(data) || data.charCodeAt(data.length - 1) !== 0x7d) return null;
  return {
    id: '',
    object: 'chat.completion.chunk',
    created: Number(head[1]),
    model: '',
    choices: NO_CHOICES,
    [WIRE_TAIL]: data.slice(head[0].length),
  };
}

function parseChunk(data: string): ChatChunk {
  let chunk: ChatChunk & { error?: { message?: string; code?: unknown } };
  try {
    chunk = JSON.parse(data);
  } catch {
    throw new UpstreamError({ status: 502, message: 'the provider sent a malformed stream event' });
  }
  if (chunk.error)
    throw new UpstreamError({
      status: 502,
      message: String(chunk.error.message ?? 'the provider reported an error mid-stream'),
    });
  if (!Array.isArray(chunk.choices))
    throw new UpstreamError({ status: 502, message: 'the provider sent a malformed stream event' });
  const head = USUAL_HEAD.exec(data);
  if (head) chunk[WIRE_TAIL] = data.slice(head[0].length);
  return chunk;
}

/** The router's options in the chat-completions dialect: `reasoning` as `reasoning_effort`; the
 * top-level cache breakpoint is Anthropic's (OpenAI-style providers cache prefixes by themselves). */
function dialect(body: Record<string, unknown>): Record<string, unknown> {
  if (body.cache_control !== undefined) delete body.cache_control;
  if (body.reasoning !== undefined) {
    const effort = reasoningEffort(body.reasoning as Reasoning);
    if (effort && body.reasoning_effort === undefined) body.reasoning_effort = effort;
    delete body.reasoning;
  }
  return body;
}

export function openaiCompatibleAdapter(deps: { client: HttpClient }): ProviderAdapter {
  const send = (call: UpstreamCall, body: Record<string, unknown>) =>
    post({
      client: deps.client,
      base: call.baseUrl,
      path: '/chat/completions',
      headers: headersFor(call.apiKey),
      body: JSON.stringify(dialect(body)),
      cancel: call.cancel,
    });
  return {
    async stream(call, opts) {
      const res = await send(call, {
        ...call.body,
        model: call.model,
        stream: true,
        stream_options: { include_usage: true },
      });
      if (res.statusCode !== 200) throw await failure(res);
      if (opts?.wireOnly)
        return res.events((data) => (data === '[DONE]' ? null : (unparsed(data) ?? parseChunk(data))));
      return res.events((data) => (data === '[DONE]' ? null : parseChunk(data)));
    },
    async complete(call) {
      const res = await send(call, { ...call.body, model: call.model, stream: false });
      if (res.statusCode !== 200) throw await failure(res);
      const completion = (await jsonBody(res)) as Completion;
      if (!completion || !Array.isArray(completion.choices))
        throw new UpstreamError({ status: 502, message: 'the provider answered with a malformed body' });
      return completion;
    },
  };
}
