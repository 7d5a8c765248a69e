// Concurrency limits (docs/abuse-resistance.md): how many model requests and how many intern chat
// streams one API key and one account (organization) may have open at once, so one client cannot
// hold every connection, upstream or event-loop turn of a gateway. Over a limit: `429
// rate_limited` with Retry-After. In-process counts by default; with REDIS_URL the slots are
// leases in Redis sorted sets shared by every gateway, renewed while held and expiring on their
// own if a gateway dies holding them (falling back to in-process counts while Redis is down, as
// the turn limiter does).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { concurrencyLimited } from '../errors.ts';

export type SlotKind = 'model' | 'stream';
export type SlotLimits = Record<SlotKind, { perKey: number; perAccount: number }>;
/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

export type ConcurrencyLimiter = {
  /** Takes one slot of `kind` for the key and its account, or throws `429 rate_limited`. */
  acquire(kind: SlotKind, who: { keyId: string; accountId: string }): Promise<Release>;
  /** Slots this gateway holds now (for tests and the shutdown check). */
  readonly held: number;
  /** Gives back what is still held (in Redis) and disconnects. */
  close(): Promise<void>;
};

const WHAT: Record<SlotKind, string> = { model: 'model requests', stream: 'intern chat streams' };
/** A slot frees when one of the caller's own requests ends; no window to wait out, so a short retry. */
const RETRY_AFTER_S = 1;

export const tooManyConcurrent = (kind: SlotKind, scope: 'key' | 'account', limit: number) =>
  concurrencyLimited({ what: WHAT[kind], scope, limit, retryAfterS: RETRY_AFTER_S });

/** In-process counts per scope; a limit of 0 means none. Exported for its unit test. */
export class MemorySlots {
  private readonly counts = new Map<string, number>();

  /** Takes a slot in every scope, or none: returns the index of the first scope that is full, else -1. */
  take(scopes: string[], limits: number[]): number {
    for (let i = 0; i < scopes.length; i++)
      if (limits[i]! > 0 && (this.counts.get(scopes[i]!) ?? 0) >= limits[i]!) return i;
    for (const s of scopes) this.counts.set(s, (this.counts.get(s) ?? 0) + 1);
    return -1;
  }

  give(scopes: string[]): void {
    for (const s of scopes) {
      const n = (this.counts.get(s) ?? 0) - 1;
      if (n > 0) this.counts.set(s, n);
      else this.counts.delete(s);
    }
  }
}

// Both scopes are checked and taken in one script, so two gateways cannot both take the last slot.
// Scores are Redis's own clock (expiry times), so gateways' clocks do not matter.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
for i, k in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  local limit = tonumber(ARGV[i + 2])
  if limit > 0 and redis.call('ZCARD', k) >= limit then return i end
end
for _, k in ipairs(KEYS) do
  redis.call('ZADD', k, now + lease, ARGV[1])
  redis.call('PEXPIRE', k, lease)
end
return 0`;
// Renews this gateway's leases: ARGV[1] the lease length, then one member per key.
const RENEW = `
local t = redis.call('TIME')
local until_ = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', until_, ARGV[i + 1])
  redis.call('PEXPIRE', k, ARGV[1])
end
return 0`;

type Held = { scopes: string[]; id: string | null };

export async function createConcurrencyLimiter(opts: {
  limits: SlotLimits;
  redisUrl?: string;
  keyPrefix?: string;
  leaseMs?: number;
}): Promise<ConcurrencyLimiter> {
  const prefix = opts.keyPrefix ?? 'cohort:slots';
  const leaseMs = opts.leaseMs ?? 60_000;
  const memory = new MemorySlots();
  const held = new Set<Held>();
  let redis: Redis | null = null;
  let renewTimer: NodeJS.Timeout | null = null;
  if (opts.redisUrl) {
    const { Redis: Client } = await import('ioredis');
    redis = new Client(opts.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    redis.on('error', () => {}); // in-process counts cover outages; ioredis reconnects by itself
    redis.defineCommand('cohortSlotAcquire', { lua: ACQUIRE });
    redis.defineCommand('cohortSlotRenew', { lua: RENEW });
    renewTimer = setInterval(() => void renew().catch(() => {}), Math.floor(leaseMs / 3)).unref();
  }
  type Scripted = Redis & {
    cohortSlotAcquire(n: number, ...args: (string | number)[]): Promise<number>;
    cohortSlotRenew(n: number, ...args: (string | number)[]): Promise<number>;
  };

  async function renew(): Promise<void> {
    const keys: string[] = [];
    const ids: string[] = [];
    for (const h of held) {
      if (!h.id) continue;
      for (const s of h.scopes) {
        keys.push(s);
        ids.push(h.id);
      }
    }
    // In batches, so one script never holds Redis for long.
    for (let i = 0; i < keys.length; i += 500) {
      const k = keys.slice(i, i + 500);
      await (redis as Scripted).cohortSlotRenew(k.length, ...k, leaseMs, ...ids.slice(i, i + 500));
    }
  }

  function giveBack(h: Held): void {
    if (!held.delete(h)) return;
    if (!h.id) return memory.give(h.scopes);
    const pipeline = redis!.pipeline();
    for (const s of h.scopes) pipeline.zrem(s, h.id);
    // A lease Redis did not hear the end of expires on its own.
    void pipeline.exec().catch(() => {});
  }

  return {
    async acquire(kind, who) {
      const { perKey, perAccount } = opts.limits[kind];
      const scopes = [`${prefix}:${kind}:key:${who.keyId}`, `${prefix}:${kind}:account:${who.accountId}`];
      const limits = [perKey, perAccount];
      let full: number;
      let id: string | null = null;
      if (redis) {
        id = randomUUID();
        try {
          full = (await (redis as Scripted).cohortSlotAcquire(2, ...scopes, id, leaseMs, ...limits)) - 1;
        } catch {
          id = null;
          full = memory.take(scopes, limits);
        }
      } else full = memory.take(scopes, limits);
      if (full >= 0) throw tooManyConcurrent(kind, full === 0 ? 'key' : 'account', limits[full]!);
      const h: Held = { scopes, id };
      held.add(h);
      return () => giveBack(h);
    },
    get held() {
      return held.size;
    },
    async close() {
      if (renewTimer) clearInterval(renewTimer);
      if (!redis) return;
      const pipeline = redis.pipeline();
      for (const h of held) if (h.id) for (const s of h.scopes) pipeline.zrem(s, h.id);
      held.clear();
      await pipeline.exec().catch(() => {});
      redis.disconnect();
    },
  };
}
