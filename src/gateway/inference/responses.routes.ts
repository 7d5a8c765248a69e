// POST /responses: an OpenAI Responses API request, translated to the chat-completions request
// the router serves (wire/responses-request.ts) and routed exactly like /chat/completions
// (presets, default model, credentials, slots, the request log as api_style `responses`), then
// answered as a `response` object or its event stream (wire/responses-response.ts). Before the
// first byte a refusal is the chat route's error body; after it, a `response.failed` event.
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { ResponseObject, ResponsesRequest } from './inference.schemas.ts';
import { fromResponsesBody, type ResponsesBody } from './wire/responses-request.ts';
import { echoOf, responsesEncoder, toResponse, type ResponseIdentity } from './wire/responses-response.ts';
import type { ChatChunk } from './types.ts';
import type { RequestBody } from './routing.ts';
import { errorDocs, prepareOrRefuse, routeHeader } from './respond.ts';
import { cancelOnClose, writeSse } from '../http/sse-reply.ts';
import { holdSlot } from '../http/slots.ts';

async function* frames(
  batches: AsyncIterable<ChatChunk[]>,
  encoder: ReturnType<typeof responsesEncoder>,
): AsyncGenerator<string> {
  // The response exists once a provider accepted the request: say so before its first token.
  yield encoder.start();
  for await (const batch of batches) {
    let out = '';
    for (const c of batch) out += encoder.push(c);
    yield out;
  }
}

export const responsesRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    path: '/responses',
    summary: 'Send a model request (OpenAI Responses), streamed as Responses SSE events when `stream` is true',
    tags: ['inference'],
    guard: 'any',
    errorStyle: 'chat',
    body: ResponsesRequest,
    responses: {
      200: {
        description:
          'a response, or an SSE stream of Responses events ending in response.completed, response.incomplete or response.failed',
        schema: ResponseObject,
      },
      ...errorDocs,
    },
    handler: async (req, reply, input) => {
      const parsed: ResponsesBody = input.body;
      const body: RequestBody = fromResponsesBody(parsed);
      await holdSlot(ctx, req, reply, 'model');
      const p = await prepareOrRefuse(ctx, {
        principal: principalOf(req),
        body,
        style: 'responses',
        raw: req.body,
        headers: req.headers,
      });
      const cancel = cancelOnClose(reply);
      const who = (model: string): ResponseIdentity => ({
        requestId: p.id,
        model,
        createdAt: Math.floor(Date.now() / 1000),
        echo: echoOf(parsed),
      });
      if (!p.stream) {
        const { served, completion } = await ctx.inference.complete(p, cancel);
        routeHeader(reply, p, served);
        return toResponse(completion, who(served.model));
      }
      const { served, chunks } = await ctx.inference.stream(p, cancel);
      routeHeader(reply, p, served);
      const encoder = responsesEncoder(who(served.model));
      await writeSse(reply, {
        ctx,
        cancel,
        frames: frames(chunks, encoder),
        fail: (e) => encoder.error(e),
        end: () => encoder.end(),
      });
    },
  });
};
