// POST /chat/completions: an OpenAI chat-completions request routed by the key's workspace
// (presets, default model, credentials), answered as JSON or as an SSE stream of chunks ending
// in `data: [DONE]`. Everything is resolved before the first byte; after it, a failure arrives
// as a chunk with finish_reason `error`. A client that goes away aborts the upstream request.
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import type { ApiError } from '../errors.ts';
import { ChatCompletionRequest, ChatCompletionResponse } from './inference.schemas.ts';
import type { Prepared } from './prepare.ts';
import type { RequestBody } from './routing.ts';
import { WIRE_TAIL, type ChatChunk } from './types.ts';
import { holdSlot } from '../http/slots.ts';
import { DONE, dataFrame, tailFrame } from '../../shared/sse/write.ts';
import { errorChunk } from '../http/sse-frames.ts';
import { errorDocs, prepareOrRefuse, routeHeader } from './respond.ts';
import { cancelOnClose, writeSse } from '../http/sse-reply.ts';

/** Each chunk as an SSE frame: one the provider sent in the usual layout is its own text behind the request's id and model. */
async function* openaiFrames(
  batches: AsyncIterable<ChatChunk[]>,
  o: { id: string; model: string },
): AsyncGenerator<string> {
  const id = JSON.stringify(o.id);
  const model = JSON.stringify(o.model);
  for await (const batch of batches) {
    let frames = '';
    for (const c of batch) {
      const tail = c[WIRE_TAIL];
      frames += tail === undefined ? dataFrame(c) : tailFrame({ id, model, created: c.created, tail });
    }
    yield frames;
  }
}

const errorFrame = (p: Prepared, model: string, e: ApiError) =>
  dataFrame(errorChunk({ id: p.id, model, error: e })) + DONE;

export const chatCompletionRoutes: RouteModule = (app, ctx) => {
  app.addHook('onClose', () => ctx.inference.close());

  defineRoute(app, ctx, {
    method: 'POST',
    path: '/chat/completions',
    summary: 'Send a model request (OpenAI chat completions), streamed as SSE when `stream` is true',
    tags: ['inference'],
    guard: 'any',
    errorStyle: 'chat',
    body: ChatCompletionRequest,
    responses: {
      200: {
        description: 'a completion, or an SSE stream of chunks ending in `data: [DONE]`',
        schema: ChatCompletionResponse,
      },
      ...errorDocs,
    },
    handler: async (req, reply, input) => {
      const body: RequestBody = input.body;
      await holdSlot(ctx, req, reply, 'model');
      const p = await prepareOrRefuse(ctx, {
        principal: principalOf(req),
        body,
        style: 'chat',
        raw: req.body,
        headers: req.headers,
      });
      const cancel = cancelOnClose(reply);
      if (!p.stream) {
        const { served, completion } = await ctx.inference.complete(p, cancel);
        routeHeader(reply, p, served);
        return completion;
      }
      const { served, chunks } = await ctx.inference.stream(p, cancel);
      routeHeader(reply, p, served);
      await writeSse(reply, {
        ctx,
        cancel,
        frames: openaiFrames(chunks, { id: p.id, model: served.model }),
        fail: (e) => errorFrame(p, served.model, e),
        end: () => DONE,
      });
    },
  });
};
