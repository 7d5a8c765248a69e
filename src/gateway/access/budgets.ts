// Spending limits that hold under concurrency (docs/guides/keys-and-budgets.md). A request is
// admitted only while the spend of each of its budget scopes (a key's own limit, its guardrail),
// plus what the requests in flight have reserved, is below the limit; it then reserves the cost
// of the scope's last request, and settles with its real cost when it is recorded. So a burst
// against a nearly spent budget stops as soon as the reservations reach it, and the overshoot is
// at most what was in flight. Spend is the request log's cost: a scope's counter for its current
// period starts from the store's sum (spentSince) and then counts what settles.
//
// In-process by default; with REDIS_URL the counters are one hash per scope and period in Redis,
// shared by every gateway, checked and reserved by one script (falling back to in-process counts
// while Redis is down or hung, as the concurrency limits do). A reservation whose request never
// settles (its gateway died) lapses after `reserveTtlMs`; the hash itself expires an hour after
// its period ends (a day for a limit without reset), and is then read from the store again.
// May import: errors, periods, store/redis.ts.
import { budgetExceeded } from '../errors.ts';
import { periodEnd, periodStart, type Reset } from './periods.ts';
import type { RedisLink } from '../store/redis.ts';

export type BudgetScope = {
  /** `key:<id>` or `guardrail:<id>`. */
  id: string;
  what: 'key' | 'guardrail';
  limitUsd: number;
  reset: Reset | null;
  includeByok: boolean;
};
export type Spent = { own: number; byok: number };

export type Ledger = {
  /** Reserves for the request in every scope, or throws `402` naming the first spent one. */
  admit(o: { requestId: string; scopes: readonly BudgetScope[] }): Promise<void>;
  /** The request's real cost replaces its reservation. */
  settle(o: { requestId: string; scopes: readonly BudgetScope[]; cost: number; isByok: boolean }): void;
};

const HOUR_MS = 3_600_000;

type Entry = {
  period: number;
  own: number;
  byok: number;
  last: number;
  reserved: Map<string, { amount: number; expires: number }>;
  loading: Promise<void> | null;
};

const ADMIT = `
local now = tonumber(ARGV[1])
local id = ARGV[2]
local ttl = tonumber(ARGV[3])
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 0 then return -i end
end
for i = 1, #KEYS do
  local limit = tonumber(ARGV[2 + 2 * i])
  local byok = ARGV[3 + 2 * i]
  local h = redis.call('hgetall', KEYS[i])
  local total = 0
  for j = 1, #h, 2 do
    local f = h[j]
    if f == 'own' or (f == 'byok' and byok == '1') then
      total = total + tonumber(h[j + 1])
    elseif string.sub(f, 1, 4) == 'res:' then
      local amount, expires = string.match(h[j + 1], '([^:]+):([^:]+)')
      if tonumber(expires) < now then redis.call('hdel', KEYS[i], f) else total = total + tonumber(amount) end
    end
  end
  if total >= limit then return i end
end
for i = 1, #KEYS do
  local last = redis.call('hget', KEYS[i], 'last') or '0'
  redis.call('hset', KEYS[i], 'res:' .. id, last .. ':' .. (now + ttl))
end
return 0`;

const INIT = `
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'own', ARGV[1], 'byok', ARGV[2])
  redis.call('pexpire', KEYS[1], ARGV[3])
end
return 0`;

const SETTLE = `
local field = ARGV[3] == '1' and 'byok' or 'own'
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then
    redis.call('hdel', KEYS[i], 'res:' .. ARGV[1])
    redis.call('hincrbyfloat', KEYS[i], field, ARGV[2])
    if tonumber(ARGV[2]) > 0 then redis.call('hset', KEYS[i], 'last', ARGV[2]) end
  end
end
return 0`;

type BudgetRedis = {
  cohortBudgetAdmit(n: number, ...args: (string | number)[]): Promise<number>;
  cohortBudgetInit(n: number, ...args: (string | number)[]): Promise<number>;
  cohortBudgetSettle(n: number, ...args: (string | number)[]): Promise<number>;
};

export function createLedger(opts: {
  /** The store's spend of a scope since a time (ms): the request log's cost, BYOK apart. */
  spentSince(scope: BudgetScope, from: number): Promise<Spent>;
  redis?: RedisLink | null;
  now?: () => number;
  /** How long a reservation holds without its settle (a request's longest life). */
  reserveTtlMs: number;
  keyPrefix?: string;
  onRedisError?: (err: unknown) => void;
}): Ledger {
  const now = opts.now ?? Date.now;
  const prefix = opts.keyPrefix ?? 'cohort:budget';
  const entries = new Map<string, Entry>();
  const link = opts.redis ?? null;
  const redis = link?.client as unknown as
    | (BudgetRedis & { defineCommand(name: string, def: { lua: string }): void })
    | undefined;
  if (redis) {
    redis.defineCommand('cohortBudgetAdmit', { lua: ADMIT });
    redis.defineCommand('cohortBudgetInit', { lua: INIT });
    redis.defineCommand('cohortBudgetSettle', { lua: SETTLE });
  }

  /** The scope's in-process entry for the current period, loaded from the store when new. */
  function entry(scope: BudgetScope, t: number): Entry {
    const period = periodStart(scope.reset, t);
    let e = entries.get(scope.id);
    if (!e || e.period !== period) {
      const fresh: Entry = { period, own: 0, byok: 0, last: 0, reserved: new Map(), loading: null };
      fresh.loading = opts.spentSince(scope, period).then(
        (s) => {
          fresh.own += s.own;
          fresh.byok += s.byok;
          fresh.loading = null;
        },
        (err: unknown) => {
          // Not cached: the next request reads the store again.
          if (entries.get(scope.id) === fresh) entries.delete(scope.id);
          throw err;
        },
      );
      entries.set(scope.id, fresh);
      e = fresh;
    }
    return e;
  }

  async function admitHere(requestId: string, scopes: readonly BudgetScope[]): Promise<void> {
    const t = now();
    const es = scopes.map((s) => entry(s, t));
    for (const e of es) if (e.loading) await e.loading;
    for (let i = 0; i < scopes.length; i++) {
      const s = scopes[i]!;
      const e = es[i]!;
      let total = e.own + (s.includeByok ? e.byok : 0);
      for (const [id, r] of e.reserved) {
        if (r.expires < t) e.reserved.delete(id);
        else total += r.amount;
      }
      if (total >= s.limitUsd)
        throw budgetExceeded({ what: s.what, limitUsd: s.limitUsd, resetsAt: periodEnd(s.reset, t) });
    }
    for (const e of es) e.reserved.set(requestId, { amount: e.last, expires: t + opts.reserveTtlMs });
  }

  function settleHere(o: { requestId: string; scopes: readonly BudgetScope[]; cost: number; isByok: boolean }) {
    for (const s of o.scopes) {
      const e = entries.get(s.id);
      if (!e) continue;
      e.reserved.delete(o.requestId);
      if (o.isByok) e.byok += o.cost;
      else e.own += o.cost;
      if (o.cost > 0) e.last = o.cost;
    }
  }

  const hashOf = (s: BudgetScope, t: number) => `${prefix}:${s.id}:${periodStart(s.reset, t)}`;
  const ttlOf = (s: BudgetScope, t: number) => {
    const end = periodEnd(s.reset, t);
    return end === null ? 24 * HOUR_MS : end - t + HOUR_MS;
  };

  async function admitShared(requestId: string, scopes: readonly BudgetScope[]): Promise<void> {
    const t = now();
    const keys = scopes.map((s) => hashOf(s, t));
    const args = scopes.flatMap((s) => [s.limitUsd, s.includeByok ? '1' : '0']);
    for (let round = 0; ; round++) {
      const r = await redis!.cohortBudgetAdmit(keys.length, ...keys, t, requestId, opts.reserveTtlMs, ...args);
      if (r === 0) return;
      if (r > 0) {
        const s = scopes[r - 1]!;
        throw budgetExceeded({ what: s.what, limitUsd: s.limitUsd, resetsAt: periodEnd(s.reset, t) });
      }
      // A scope this period has not seen yet: its spend so far, from the store, then again.
      if (round > scopes.length) throw new Error('budget counters vanished while being read');
      const s = scopes[-r - 1]!;
      const spent = await opts.spentSince(s, periodStart(s.reset, t));
      await redis!.cohortBudgetInit(1, keys[-r - 1]!, spent.own, spent.byok, ttlOf(s, t));
    }
  }

  return {
    async admit({ requestId, scopes }) {
      if (!scopes.length) return;
      if (!link?.usable()) return admitHere(requestId, scopes);
      try {
        return await admitShared(requestId, scopes);
      } catch (err) {
        if ((err as { status?: number }).status === 402) throw err;
        link.failed(err);
        opts.onRedisError?.(err);
        return admitHere(requestId, scopes);
      }
    },
    settle(o) {
      if (!o.scopes.length) return;
      settleHere(o);
      if (!link?.usable()) return;
      const t = now();
      const keys = o.scopes.map((s) => hashOf(s, t));
      redis!
        .cohortBudgetSettle(keys.length, ...keys, o.requestId, o.cost, o.isByok ? '1' : '0')
        .catch((err: unknown) => {
          link.failed(err);
          opts.onRedisError?.(err);
        });
    },
  };
}
