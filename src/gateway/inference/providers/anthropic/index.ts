// Adapter for the Anthropic Messages API (`anthropic`): converts the OpenAI-shaped request to
// an Anthropic body and the answer back. May import: this folder, ../http.ts, ../../types.ts.
import { failure, jsonBody, post, type HttpClient } from '../http.ts';
import { UpstreamError, type ProviderAdapter, type UpstreamCall } from '../../types.ts';
import { toAnthropicBody } from './request.ts';
import { anthropicChunker, fromAnthropicMessage, type AnthropicMessage } from './response.ts';

const VERSION = '2023-06-01';

function parseEvent(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new UpstreamError({ status: 502, message: 'the provider sent a malformed stream event' });
  }
}

export function anthropicAdapter(deps: { client: HttpClient }): ProviderAdapter {
  const send = (call: UpstreamCall, stream: boolean) =>
    post({
      client: deps.client,
      base: call.baseUrl,
      path: '/messages',
      headers: { 'anthropic-version': VERSION, ...(call.apiKey ? { 'x-api-key': call.apiKey } : {}) },
      body: JSON.stringify(toAnthropicBody(call.body, { model: call.model, stream })),
      cancel: call.cancel,
    });
  return {
    async stream(call) {
      const res = await send(call, true);
      if (res.statusCode !== 200) throw await failure(res);
      const next = anthropicChunker({ model: call.model });
      return res.events((data) => next(parseEvent(data) as Parameters<typeof next>[0]));
    },
    async complete(call) {
      const res = await send(call, false);
      if (res.statusCode !== 200) throw await failure(res);
      const m = (await jsonBody(res)) as AnthropicMessage;
      if (!m || !Array.isArray(m.content))
        throw new UpstreamError({ status: 502, message: 'the provider answered with a malformed body' });
      return fromAnthropicMessage(m);
    },
  };
}
