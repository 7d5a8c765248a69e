// Turn rate limits (docs/reference/intern-chat.md#who-may-chat, `429 rate_limited`): turns started per
// minute by the user or organization a key acts as. In-process counters by default; in Redis with REDIS_URL
// so several gateways share them, falling back to in-process counters while Redis is down or hung
// (docs/failure-modes.md): a Redis that does not answer costs a turn at most one command timeout.
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { turnsLimited } from '../errors.ts';
import { openRedis, type RedisLink } from '../store/redis.ts';

export type TurnLimiter = {
  /** Counts one turn for the subject; throws `429 rate_limited` with Retry-After when over the limit. */
  consume(subjectId: string): Promise<void>;
  close(): Promise<void>;
};

export async function createTurnLimiter(opts: {
  perMinute: number;
  /** The gateway's Redis link; or `redisUrl`, for a connection of the limiter's own. */
  redis?: RedisLink;
  redisUrl?: string;
  keyPrefix?: string;
}): Promise<TurnLimiter> {
  const base = { points: opts.perMinute, duration: 60, keyPrefix: opts.keyPrefix ?? 'cohort:turns' };
  const memory = new RateLimiterMemory(base);
  const own = !opts.redis && !!opts.redisUrl;
  const link = opts.redis ?? (opts.redisUrl ? await openRedis({ url: opts.redisUrl, timeoutMs: 1_000 }) : null);
  const shared = link ? new RateLimiterRedis({ ...base, storeClient: link.client }) : null;
  const over = (res: unknown) => {
    if (res instanceof RateLimiterRes) return turnsLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
    return null;
  };
  return {
    async consume(subjectId) {
      try {
        if (!shared || !link!.usable()) {
          await memory.consume(subjectId);
          return;
        }
        try {
          await shared.consume(subjectId);
        } catch (err) {
          if (err instanceof RateLimiterRes) throw err;
          // Redis failed or did not answer: this turn, and the next while it is hung, count here.
          link!.failed(err);
          await memory.consume(subjectId);
        }
      } catch (res) {
        throw over(res) ?? res;
      }
    },
    async close() {
      if (own) await link!.close();
    },
  };
}
