// POST /messages: an Anthropic Messages API request, routed like /chat/completions and answered
// as an Anthropic message or its event stream (message_start … message_stop, or an `error`
// event after the stream opened). Accepts the key as `x-api-key` too, as Anthropic clients send it.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { MessageResponse, MessagesRequest } from './inference.schemas.ts';
import { fromMessagesBody } from './wire/anthropic-request.ts';
import { messagesEncoder, toMessage } from './wire/anthropic-response.ts';
import type { ChatChunk } from './types.ts';
import type { RequestBody } from './routing.ts';
import { errorDocs, prepareOrRefuse, routeHeader } from './respond.ts';
import { cancelOnClose, writeSse } from '../http/sse-reply.ts';
import { holdSlot } from '../http/slots.ts';

async function* frames(
  batches: AsyncIterable<ChatChunk[]>,
  encoder: ReturnType<typeof messagesEncoder>,
): AsyncGenerator<string> {
  for await (const batch of batches) {
    let out = '';
    for (const c of batch) out += encoder.push(c);
    yield out;
  }
}

export const messagesRoutes: RouteModule = (app, ctx) => {
  // Anthropic clients send their key as x-api-key.
  const apiKeyHeader = (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    const apiKey = req.headers['x-api-key'];
    if (!req.headers.authorization && typeof apiKey === 'string') req.headers.authorization = `Bearer ${apiKey}`;
    done();
  };

  defineRoute(app, ctx, {
    method: 'POST',
    path: '/messages',
    summary: 'Send a model request (Anthropic messages), streamed as Anthropic SSE events when `stream` is true',
    tags: ['inference'],
    guard: 'any',
    beforeGuard: [apiKeyHeader],
    headers: z.object({
      'x-api-key': z
        .string()
        .optional()
        .describe('the API key, as Anthropic clients send it (instead of Authorization: Bearer)'),
    }),
    errorStyle: 'chat',
    body: MessagesRequest,
    responses: {
      200: { description: 'a message, or an SSE stream of Anthropic events', schema: MessageResponse },
      ...errorDocs,
    },
    handler: async (req, reply, input) => {
      const body: RequestBody = fromMessagesBody(input.body);
      await holdSlot(ctx, req, reply, 'model');
      const p = await prepareOrRefuse(ctx, {
        principal: principalOf(req),
        body,
        style: 'messages',
        raw: req.body,
        headers: req.headers,
      });
      const cancel = cancelOnClose(reply);
      if (!p.stream) {
        const { served, completion } = await ctx.inference.complete(p, cancel);
        routeHeader(reply, p, served);
        return toMessage(completion);
      }
      const { served, chunks } = await ctx.inference.stream(p, cancel);
      routeHeader(reply, p, served);
      const encoder = messagesEncoder({ model: served.model });
      await writeSse(reply, {
        ctx,
        cancel,
        frames: frames(chunks, encoder),
        fail: (e) => encoder.error(e.message, e.status),
        end: () => encoder.end(),
      });
    },
  });
};
