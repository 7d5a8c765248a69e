// Readiness: whether this gateway can serve requests now, checked on each call (GET /ready):
// the store answers a query and can write (docs/failure-modes.md: a full disk), and Redis
// answers PING where REDIS_URL is configured. Liveness needs no check. Each check is bounded, so
// a hung dependency reads as not ready, not as a hang.
// May import: store, node built-ins, ioredis (only with a Redis URL).
import { statfsSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Db } from './store/db.ts';
import { openRedis, isTimeout, type RedisLink } from './store/redis.ts';
import { scrub } from '../shared/log.ts';

export type Check = 'ok' | 'not configured' | `failed: ${string}`;
export type Readiness = { ready: boolean; checks: { store: Check; redis: Check } };
export type Health = { ready(): Promise<Readiness>; close(): Promise<void> };

const CHECK_MS = 2_000;

/** The innermost reason (Drizzle wraps a driver's error in "Failed query: …"). */
function reason(err: unknown): string {
  let e = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(err);
}

const failed = (err: unknown): Check => `failed: ${scrub(reason(err)).slice(0, 200)}`;

/** pg's words for its own bounds passing (COHORT_DB_TIMEOUT_MS): a query, or getting a connection. */
const PG_TIMEOUT =
  /^(Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout)$/;

async function bounded(what: Promise<unknown>, dbTimeoutMs?: number): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_MS} ms`)), CHECK_MS)),
  );
  try {
    await Promise.race([what, late]);
    return 'ok';
  } catch (err) {
    if (dbTimeoutMs && PG_TIMEOUT.test(reason(err))) return `failed: no answer within ${dbTimeoutMs} ms`;
    return failed(err);
  } finally {
    clearTimeout(timer);
  }
}

/** Below this a PostgreSQL write may already fail for room (a new page, a WAL segment). */
const MIN_FREE_BYTES = 1024 * 1024;

function diskFull(dir: string): string | null {
  try {
    const s = statfsSync(dir);
    const free = s.bavail * s.bsize;
    return free < MIN_FREE_BYTES ? `the data dir's disk is full (${free} bytes free)` : null;
  } catch {
    return null; // the store's own check says whether it answers
  }
}

export async function createHealth(opts: {
  db: Db;
  /** Why the store cannot write now (the request log's last write failed for the disk, say), or null. */
  storeWrites?: () => string | null;
  /** A directory on the store's disk (PGlite's data dir): too little room there is a store that cannot write. */
  disk?: string;
  /** PostgreSQL's bound on a query (COHORT_DB_TIMEOUT_MS), to name it when it passes. */
  dbTimeoutMs?: number;
  /** The gateway's Redis link; or `redisUrl`, for a connection of the check's own. */
  redis?: RedisLink;
  redisUrl?: string;
}): Promise<Health> {
  let link = opts.redis ?? null;
  const own = !link && !!opts.redisUrl;
  // Its own link is opened at the first check and again after a failure, so a Redis down at start is not final.
  const linkFor = async (): Promise<RedisLink> => {
    link ??= await openRedis({ url: opts.redisUrl!, timeoutMs: CHECK_MS / 2 });
    return link;
  };
  async function redisCheck(): Promise<Check> {
    if (!opts.redis && !opts.redisUrl) return 'not configured';
    try {
      const l = await linkFor();
      await l.client.ping();
      return 'ok';
    } catch (err) {
      if (isTimeout(err)) return `failed: no answer within ${link?.timeoutMs ?? CHECK_MS} ms`;
      return failed(err);
    }
  }
  async function storeCheck(): Promise<Check> {
    const answers = await bounded(opts.db.execute(sql`select 1`), opts.dbTimeoutMs);
    if (answers !== 'ok') return answers;
    const cannotWrite = opts.storeWrites?.() ?? (opts.disk ? diskFull(opts.disk) : null);
    return cannotWrite ? `failed: cannot write: ${scrub(cannotWrite).slice(0, 200)}` : 'ok';
  }
  return {
    async ready() {
      const [store, cache] = await Promise.all([storeCheck(), redisCheck()]);
      return { ready: store === 'ok' && !cache.startsWith('failed'), checks: { store, redis: cache } };
    },
    async close() {
      if (own) await link?.close();
    },
  };
}
