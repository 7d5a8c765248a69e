// A streamed reply from text frames, for routes that relay an upstream stream (the model
// requests): the cancellation tied to the client's connection, and the SSE response that ends in
// the route's own error frame on a failure or a gateway shutdown.
import type { FastifyReply } from 'fastify';
import type { Ctx } from '../context.ts';
import { ApiError, gatewayStopping, internalError } from '../errors.ts';
import { Cancel } from '../../shared/http/cancel.ts';
import { openSse } from '../../shared/sse/write.ts';

/** A cancellation that fires when the client goes away before the response is complete. */
export function cancelOnClose(reply: FastifyReply): Cancel {
  const cancel = new Cancel();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) cancel.cancel();
  });
  return cancel;
}

/** Writes an SSE response from text frames (one write per upstream read); `fail` renders the in-stream error frame. */
export async function writeSse(
  reply: FastifyReply,
  o: { cancel: Cancel; frames: AsyncIterable<string>; fail: (e: ApiError) => string; end: () => string; ctx: Ctx },
) {
  reply.hijack();
  // On shutdown: the error frame first, then the upstream abort (whose own ending is then not written).
  const onShutdown = () => {
    sse.end(o.fail(gatewayStopping()));
    o.cancel.cancel();
  };
  const sse = openSse(reply.raw, {
    keepaliveMs: o.ctx.config.keepaliveMs,
    headers: reply.getHeaders(),
    registry: o.ctx.streams,
    onShutdown,
  });
  // What one upstream read brings is written as one send: the frames, and the end when the stream
  // ends in the same read (res.end() flushes a corked socket), instead of a system call for each.
  const res = reply.raw;
  const uncork = () => res.uncork();
  try {
    for await (const frame of o.frames) {
      res.cork();
      process.nextTick(uncork);
      await sse.write(frame);
    }
    sse.end(o.end());
  } catch (err) {
    if (o.cancel.aborted || sse.gone) return sse.destroy();
    if (!(err instanceof ApiError)) o.ctx.log.error({ err }, 'inference stream failed');
    sse.end(o.fail(err instanceof ApiError ? err : internalError()));
  }
}
