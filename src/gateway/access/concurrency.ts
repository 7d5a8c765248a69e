// Concurrency limits (docs/abuse-resistance.md): how many model requests and how many intern chat
// streams one API key and one account (organization) may have open at once, so one client cannot
// hold every connection, upstream or event-loop turn of a gateway. Over a limit: `429
// rate_limited` with Retry-After. In-process counts by default; with REDIS_URL the slots are
// leases in Redis sorted sets shared by every gateway (falling back to in-process counts while
// Redis is down or hung, as the turn limiter does).
//
// A gateway's leases die with it (docs/failure-modes.md): each lease names its gateway, and each
// gateway writes a heartbeat (its deadline, by Redis's clock) every sixth of
// COHORT_GATEWAY_LEASE_MS. A scope found full drops the leases of gateways whose deadline has
// passed, so a crashed gateway's slots are free again within that lease; and while its heartbeat
// is late but not yet past, the `429` says how many slots a silent gateway holds and when they
// free, in its message and Retry-After. Each lease also expires on its own unless renewed (every
// 20 s, for 60 s): a lease whose end a gateway could not tell Redis goes even while it lives.
// May import: errors, store/redis.ts, node built-ins.
import { randomBytes } from 'node:crypto';
import { concurrencyLimited } from '../errors.ts';
import { openRedis, type RedisLink } from '../store/redis.ts';

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

export const tooManyConcurrent = (
  kind: SlotKind,
  scope: 'key' | 'account',
  limit: number,
  silent?: { count: number; freedInMs: number },
) =>
  concurrencyLimited({
    what: WHAT[kind],
    scope,
    limit,
    retryAfterS: silent?.count ? Math.max(1, Math.ceil(silent.freedInMs / 1000)) : RETRY_AFTER_S,
    silent: silent?.count ? silent.count : undefined,
  });

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
// Scores are Redis's own clock (expiry times), so gateways' clocks do not matter. A lease is
// `<gateway>/<n>`; the last key is the hash of gateways' heartbeat deadlines. A full scope is
// scanned once: leases of gateways past their deadline (or with none: gone cleanly, or a lease of
// an older build, which has no `/`) go; those of gateways late by `ARGV[3]` are counted.
// Returns {full scope (0: none), leases of late gateways in it, ms until the first of them goes}.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
local late = tonumber(ARGV[3])
local owners = KEYS[#KEYS]
local deadlines = {}
local function deadline(m)
  local o = string.match(m, '^([^/]+)/')
  if not o then return nil end
  if deadlines[o] == nil then deadlines[o] = tonumber(redis.call('HGET', owners, o)) or 0 end
  return deadlines[o]
end
for i = 1, #KEYS - 1 do
  local k = KEYS[i]
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  local limit = tonumber(ARGV[i + 3])
  if limit > 0 and redis.call('ZCARD', k) >= limit then
    local silent, soonest = 0, -1
    for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do
      local d = deadline(m)
      if d and d <= now then
        redis.call('ZREM', k, m)
      elseif d and d - now < late then
        silent = silent + 1
        if soonest < 0 or d - now < soonest then soonest = d - now end
      end
    end
    if redis.call('ZCARD', k) >= limit then return {i, silent, soonest} end
  end
end
for i = 1, #KEYS - 1 do
  redis.call('ZADD', KEYS[i], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[i], lease)
end
return {0, 0, 0}`;
// Renews this gateway's leases: ARGV[1] the lease length, then one member per key.
const RENEW = `
local t = redis.call('TIME')
local until_ = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', until_, ARGV[i + 1])
  redis.call('PEXPIRE', k, ARGV[1])
end
return 0`;
// This gateway's heartbeat: its deadline, ARGV[2] ms from now; gateways silent for an hour are forgotten.
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) < now - 3600000 then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('PEXPIRE', KEYS[1], 86400000)
return 0`;

type Held = { scopes: string[]; id: string | null };
type Scripted = RedisLink['client'] & {
  cohortSlotAcquire(n: number, ...args: (string | number)[]): Promise<[number, number, number]>;
  cohortSlotRenew(n: number, ...args: (string | number)[]): Promise<number>;
  cohortSlotBeat(n: number, ...args: (string | number)[]): Promise<number>;
};

export async function createConcurrencyLimiter(opts: {
  limits: SlotLimits;
  /** The gateway's Redis link; or `redisUrl`, for a connection of the limiter's own. */
  redis?: RedisLink;
  redisUrl?: string;
  redisTimeoutMs?: number;
  keyPrefix?: string;
  /** How long a lease lasts unless renewed (renewed every third of it while held). */
  leaseMs?: number;
  /** How long this gateway's leases outlive its last heartbeat (COHORT_GATEWAY_LEASE_MS). */
  gatewayLeaseMs?: number;
}): Promise<ConcurrencyLimiter> {
  const prefix = opts.keyPrefix ?? 'cohort:slots';
  const owners = `${prefix}:gateways`;
  const leaseMs = opts.leaseMs ?? 60_000;
  const gatewayLeaseMs = opts.gatewayLeaseMs ?? 6_000;
  const beatMs = Math.max(50, Math.floor(gatewayLeaseMs / 6));
  // A live gateway's deadline is at most one beat (and a round trip) short of a whole lease; one
  // that missed two beats and a half is late: it stopped, or cannot reach Redis.
  const lateMs = gatewayLeaseMs - Math.floor(beatMs * 2.5);
  const memory = new MemorySlots();
  const held = new Set<Held>();
  /** Leases Redis may hold that this gateway no longer does: a release or an acquire that timed out. */
  const orphans: Held[] = [];
  const owner = randomBytes(6).toString('base64url');
  let seq = 0;
  const own = !opts.redis && !!opts.redisUrl;
  const link: RedisLink | null =
    opts.redis ??
    (opts.redisUrl ? await openRedis({ url: opts.redisUrl, timeoutMs: opts.redisTimeoutMs ?? 1_000 }) : null);
  const timers: NodeJS.Timeout[] = [];
  const redis = link?.client as Scripted | undefined;

  const tell = <T>(p: Promise<T>): Promise<T> =>
    p.catch((err: unknown) => {
      link!.failed(err);
      throw err;
    });

  async function beat(): Promise<void> {
    if (!link?.usable()) return;
    await tell(redis!.cohortSlotBeat(1, owners, owner, gatewayLeaseMs));
    // Leases whose end Redis did not hear, told now.
    if (orphans.length) {
      const pipeline = redis!.pipeline();
      for (const h of orphans.splice(0)) for (const s of h.scopes) pipeline.zrem(s, h.id!);
      await tell(pipeline.exec());
    }
  }

  async function renew(): Promise<void> {
    if (!link?.usable()) return;
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
      await tell(redis!.cohortSlotRenew(k.length, ...k, leaseMs, ...ids.slice(i, i + 500)));
    }
  }

  if (redis) {
    redis.defineCommand('cohortSlotAcquire', { lua: ACQUIRE });
    redis.defineCommand('cohortSlotRenew', { lua: RENEW });
    redis.defineCommand('cohortSlotBeat', { lua: BEAT });
    // The first heartbeat before the first lease: a lease of a gateway with none is dropped as a dead one's.
    await beat().catch(() => {});
    timers.push(
      setInterval(() => void beat().catch(() => {}), beatMs).unref(),
      setInterval(() => void renew().catch(() => {}), Math.floor(leaseMs / 3)).unref(),
    );
  }

  function giveBack(h: Held): void {
    if (!held.delete(h)) return;
    if (!h.id) return memory.give(h.scopes);
    if (!link!.usable()) return void orphans.push(h);
    const pipeline = redis!.pipeline();
    for (const s of h.scopes) pipeline.zrem(s, h.id);
    void tell(pipeline.exec()).catch(() => orphans.push(h));
  }

  return {
    async acquire(kind, who) {
      const { perKey, perAccount } = opts.limits[kind];
      const scopes = [`${prefix}:${kind}:key:${who.keyId}`, `${prefix}:${kind}:account:${who.accountId}`];
      const limits = [perKey, perAccount];
      let full = -1;
      let silent: { count: number; freedInMs: number } | undefined;
      let id: string | null = null;
      if (link?.usable()) {
        id = `${owner}/${++seq}`;
        try {
          const [scope, count, freedInMs] = await tell(
            redis!.cohortSlotAcquire(3, ...scopes, owners, id, leaseMs, lateMs, ...limits),
          );
          full = scope - 1;
          silent = { count, freedInMs };
        } catch {
          // Timed out, Redis may still take the lease when it answers: it is given back then.
          orphans.push({ scopes, id });
          id = null;
          full = memory.take(scopes, limits);
        }
      } else full = memory.take(scopes, limits);
      if (full >= 0) throw tooManyConcurrent(kind, full === 0 ? 'key' : 'account', limits[full]!, silent);
      const h: Held = { scopes, id };
      held.add(h);
      return () => giveBack(h);
    },
    get held() {
      return held.size;
    },
    async close() {
      for (const t of timers) clearInterval(t);
      if (!redis) return;
      if (link!.usable()) {
        const pipeline = redis.pipeline();
        for (const h of [...held, ...orphans]) if (h.id) for (const s of h.scopes) pipeline.zrem(s, h.id);
        // Gone cleanly: any lease left behind is dropped as a dead gateway's.
        pipeline.hdel(owners, owner);
        await pipeline.exec().catch(() => {});
      }
      held.clear();
      if (own) await link!.close();
    },
  };
}
