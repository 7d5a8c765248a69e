// POST /chat/completions: an OpenAI chat-completions request routed by the key's workspace
// (presets, default model, credentials), answered as JSON or as an SSE stream of chunks ending
// in `data: [DONE]`. Everything is resolved before the first byte; after it, a failure arrives
// as a chunk with finish_reason `error`. A client that goes away aborts the upstream request.
// Also exports the SSE plumbing that messages.ts shares.
import { z } from 'zod';
import type { FastifyReply } from 'fastify';
import type { RouteModule } from '../http/app.ts';
import { guard, principalOf } from '../http/app.ts';
import { parseWith } from '../http/validate.ts';
import type { Ctx } from '../context.ts';
import { ApiError, gatewayStopping, internalError } from '../errors.ts';
import { ChatCompletionRequest, ChatCompletionResponse } from './inference.schemas.ts';
import type { ApiStyle, Prepared } from './service.ts';
import type { RequestBody } from './routing.ts';
import type { Principal } from '../access/identity-store.ts';
import { Cancel, WIRE_TAIL, type ChatChunk } from './types.ts';
import { openSse } from '../http/sse.ts';
import { holdSlot } from '../http/slots.ts';

const ChatError = z.object({ error: z.object({ code: z.number().int(), message: z.string(), metadata: z.object({ reason: z.string(), retryable: z.boolean() }).optional() }) });

/** Resolves a request; a refusal is recorded in the request log before it is returned. */
export async function prepareOrRefuse(ctx: Ctx, o: { principal: Principal; body: RequestBody; style: ApiStyle; raw: unknown }): Promise<Prepared> {
  const started = performance.now();
  try {
    return await ctx.inference.prepare(o);
  } catch (err) {
    if (err instanceof ApiError) ctx.inference.refused({ ...o, stream: o.body.stream === true, requestedModel: o.body.model ?? null, error: err, started });
    throw err;
  }
}

/** A cancellation that fires when the client goes away before the response is complete. */
export function cancelOnClose(reply: FastifyReply): Cancel {
  const cancel = new Cancel();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) cancel.cancel();
  });
  return cancel;
}

/** Writes an SSE response from text frames (one write per upstream read); `fail` renders the in-stream error frame. */
export async function writeSse(reply: FastifyReply, o: { cancel: Cancel; frames: AsyncIterable<string>; fail: (e: ApiError) => string; end: () => string; ctx: Ctx }) {
  reply.hijack();
  // On shutdown: the error frame first, then the upstream abort (whose own ending is then not written).
  const onShutdown = () => {
    sse.end(o.fail(gatewayStopping()));
    o.cancel.cancel();
  };
  const sse = openSse(reply.raw, { keepaliveMs: o.ctx.config.keepaliveMs, headers: reply.getHeaders(), registry: o.ctx.streams, onShutdown });
  try {
    for await (const frame of o.frames) await sse.write(frame);
    sse.end(o.end());
  } catch (err) {
    if (o.cancel.aborted || sse.gone) return sse.destroy();
    if (!(err instanceof ApiError)) o.ctx.log.error({ err }, 'inference stream failed');
    sse.end(o.fail(err instanceof ApiError ? err : internalError()));
  }
}

/** Each chunk as an SSE frame: one the provider sent in the usual layout is its own text behind the request's id and model. */
async function* openaiFrames(batches: AsyncIterable<ChatChunk[]>, o: { id: string; model: string }): AsyncGenerator<string> {
  const id = JSON.stringify(o.id);
  const model = JSON.stringify(o.model);
  for await (const batch of batches) {
    let frames = '';
    for (const c of batch) {
      const tail = c[WIRE_TAIL];
      frames += tail === undefined ? `data: ${JSON.stringify(c)}\n\n` : `data: {"id":${id},"object":"chat.completion.chunk","created":${c.created},"model":${model},${tail}\n\n`;
    }
    yield frames;
  }
}

function errorFrame(p: Prepared, model: string, e: ApiError): string {
  const chunk = {
    id: p.id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
    error: { code: e.status, message: e.message, ...(e.reason ? { metadata: { reason: e.reason, retryable: e.retryable } } : {}) },
  };
  return `data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`;
}

/** The refusals of both model-request routes, for the OpenAPI document. */
export const errorDocs = Object.fromEntries([400, 401, 403, 404, 429, 502, 504].map((c) => [c, { description: 'error', schema: ChatError }]));

export const chatCompletionRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'any');
  app.addHook('onClose', () => ctx.inference.close());

  ctx.docs.add({
    method: 'post',
    path: '/chat/completions',
    summary: 'Send a model request (OpenAI chat completions), streamed as SSE when `stream` is true',
    tags: ['inference'],
    body: ChatCompletionRequest,
    responses: {
      200: { description: 'a completion, or an SSE stream of chunks ending in `data: [DONE]`', schema: ChatCompletionResponse },
      ...errorDocs,
    },
  });
  app.post('/chat/completions', { onRequest, config: { errorStyle: 'chat' } }, async (req, reply) => {
    const body = parseWith(ChatCompletionRequest, req.body) as RequestBody;
    await holdSlot(ctx, req, reply, 'model');
    const p = await prepareOrRefuse(ctx, { principal: principalOf(req), body, style: 'chat', raw: req.body });
    const cancel = cancelOnClose(reply);
    if (!p.stream) return (await ctx.inference.complete(p, cancel)).completion;
    const { served, chunks } = await ctx.inference.stream(p, cancel);
    await writeSse(reply, { ctx, cancel, frames: openaiFrames(chunks, { id: p.id, model: served.model }), fail: (e) => errorFrame(p, served.model, e), end: () => 'data: [DONE]\n\n' });
  });
};
