// Adapter for every provider that speaks OpenAI chat completions (openai, groq, together,
// deepinfra, fireworks, mistral, xai, deepseek, cerebras, ollama, vLLM, …): the request goes as
// is with the provider's model id; streams ask for usage in the last chunk.
// May import: ../../http.ts, ../../types.ts, the client type of src/http.
import type { H1Client } from '../../../http/h1.ts';
import { failure, jsonBody, post } from '../../http.ts';
import { UpstreamError, WIRE_TAIL, type ChatChunk, type Completion, type ProviderAdapter, type UpstreamCall } from '../../types.ts';

const headersFor = (apiKey: string | null): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {});

/** The layout OpenAI, vLLM, Ollama, Groq and the rest send: id, object, created, model, then the rest. */
const USUAL_HEAD = /^\{"id":"[^"\\]*","object":"chat\.completion\.chunk","created":\d+,"model":"[^"\\]*",/;

function parseChunk(data: string): ChatChunk {
  let chunk: ChatChunk & { error?: { message?: string; code?: unknown } };
  try {
    chunk = JSON.parse(data);
  } catch {
    throw new UpstreamError({ status: 502, message: 'the provider sent a malformed stream event' });
  }
  if (chunk.error) throw new UpstreamError({ status: 502, message: String(chunk.error.message ?? 'the provider reported an error mid-stream') });
  if (!Array.isArray(chunk.choices)) throw new UpstreamError({ status: 502, message: 'the provider sent a malformed stream event' });
  const head = USUAL_HEAD.exec(data);
  if (head) chunk[WIRE_TAIL] = data.slice(head[0].length);
  return chunk;
}

export function openaiCompatibleAdapter(deps: { client: H1Client }): ProviderAdapter {
  const send = (call: UpstreamCall, body: Record<string, unknown>) =>
    post({ client: deps.client, base: call.baseUrl, path: '/chat/completions', headers: headersFor(call.apiKey), body: JSON.stringify(body), cancel: call.cancel });
  return {
    async stream(call) {
      const res = await send(call, { ...call.body, model: call.model, stream: true, stream_options: { include_usage: true } });
      if (res.statusCode !== 200) throw await failure(res, call.apiKey);
      return res.events((data) => (data === '[DONE]' ? null : parseChunk(data)));
    },
    async complete(call) {
      const res = await send(call, { ...call.body, model: call.model, stream: false });
      if (res.statusCode !== 200) throw await failure(res, call.apiKey);
      const completion = (await jsonBody(res)) as Completion;
      if (!completion || !Array.isArray(completion.choices)) throw new UpstreamError({ status: 502, message: 'the provider answered with a malformed body' });
      return completion;
    },
  };
}
