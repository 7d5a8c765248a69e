// Turn rate limits (SPEC §5 rule 5, §7 `429 rate_limited`): turns started per minute by the user
// or organization a key acts as. In-process counters by default; in Redis with REDIS_URL so
// several gateways share them (falling back to in-process counters while Redis is down).
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { turnsLimited } from '../errors.ts';

export type TurnLimiter = {
  /** Counts one turn for the subject; throws `429 rate_limited` with Retry-After when over the limit. */
  consume(subjectId: string): Promise<void>;
  close(): Promise<void>;
};

export async function createTurnLimiter(opts: {
  perMinute: number;
  redisUrl?: string;
  keyPrefix?: string;
}): Promise<TurnLimiter> {
  const base = { points: opts.perMinute, duration: 60, keyPrefix: opts.keyPrefix ?? 'cohort:turns' };
  const memory = new RateLimiterMemory(base);
  let redis: Redis | null = null;
  let limiter: RateLimiterAbstract = memory;
  if (opts.redisUrl) {
    // Loaded only with REDIS_URL: a gateway without it does not carry the client (about 2 MB of heap).
    const { Redis: Client } = await import('ioredis');
    redis = new Client(opts.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    redis.on('error', () => {}); // the insurance limiter covers outages; ioredis reconnects by itself
    limiter = new RateLimiterRedis({ ...base, storeClient: redis, insuranceLimiter: memory });
  }
  return {
    async consume(subjectId) {
      try {
        await limiter.consume(subjectId);
      } catch (res) {
        if (res instanceof RateLimiterRes) throw turnsLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
        throw res;
      }
    },
    async close() {
      if (redis) redis.disconnect();
    },
  };
}
