// Readiness: whether this gateway can serve requests now, checked on each call (GET /ready):
// the store answers a query, and Redis answers PING where REDIS_URL is configured. Liveness
// needs no check. Each check is bounded, so a hung dependency reads as not ready, not as a hang.
// May import: store, node built-ins, ioredis (only with a Redis URL).
import { sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import type { Db } from './store/db.ts';
import { scrub } from '../shared/log.ts';

export type Check = 'ok' | 'not configured' | `failed: ${string}`;
export type Readiness = { ready: boolean; checks: { store: Check; redis: Check } };
export type Health = { ready(): Promise<Readiness>; close(): Promise<void> };

const CHECK_MS = 2_000;

async function bounded(what: Promise<unknown>): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_MS} ms`)), CHECK_MS)),
  );
  try {
    await Promise.race([what, late]);
    return 'ok';
  } catch (err) {
    return `failed: ${scrub(err instanceof Error ? err.message : String(err)).slice(0, 200)}`;
  } finally {
    clearTimeout(timer);
  }
}

export async function createHealth(opts: { db: Db; redisUrl?: string }): Promise<Health> {
  let redis: Redis | null = null;
  if (opts.redisUrl) {
    const { Redis: Client } = await import('ioredis');
    // No offline queue: a PING while Redis is down fails at once instead of waiting for a reconnect.
    redis = new Client(opts.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    redis.on('error', () => {}); // reported by the check that fails; ioredis reconnects by itself
    await redis.connect().catch(() => {});
  }
  return {
    async ready() {
      const [store, cache] = await Promise.all([
        bounded(opts.db.execute(sql`select 1`)),
        redis ? bounded(redis.ping()) : Promise.resolve<Check>('not configured'),
      ]);
      return { ready: store === 'ok' && !cache.startsWith('failed'), checks: { store, redis: cache } };
    },
    async close() {
      redis?.disconnect();
    },
  };
}
