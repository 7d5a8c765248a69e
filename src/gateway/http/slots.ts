// Holds a concurrency slot (src/gateway/access/concurrency.ts) for the life of one response: taken before
// the route does its work, given back when the response closes, which it does on every ending
// (finished, refused, failed, the client gone, cut off by the shutdown).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Ctx } from '../context.ts';
import type { SlotKind } from '../access/concurrency.ts';
import { principalOf } from './app.ts';

export async function holdSlot(ctx: Ctx, req: FastifyRequest, reply: FastifyReply, kind: SlotKind): Promise<void> {
  const p = principalOf(req);
  const res = reply.raw;
  let release: (() => void) | null = null;
  let closed = false;
  // Listening before the slot is taken: a client that leaves while Redis answers still frees it.
  const onClose = () => {
    closed = true;
    release?.();
  };
  res.once('close', onClose);
  try {
    release = await ctx.slots.acquire(kind, { keyId: p.keyId, accountId: p.orgId });
  } catch (err) {
    res.off('close', onClose);
    throw err;
  }
  if (closed) release();
}
