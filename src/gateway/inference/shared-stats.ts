// Endpoint measurements and session pins shared by the gateways on one Redis
// (docs/internals/architecture.md#shared-routing-state). A request never waits on Redis for the
// measurements: samples are counted here at once and queued, and every SYNC_MS one pipeline sends
// the queue (RPUSH + LTRIM to the window) and a second reads every shared endpoint's window back
// into this gateway's store, so each gateway sorts by what all of them measured, at most one sync
// late. A session pin is one Redis key per workspace session (hashed), read once by a request that
// names a session and written without waiting; the auto-router's model pins (pin_model) are kept
// the same way under their own namespace. Without a usable Redis all fall back to this gateway's
// own memory. Only what service.ts records reaches here: calls on the operator's
// capacity, never a tenant's own key (a tenant cannot move what others are routed by).
import { createHash } from 'node:crypto';
import type { Logger } from '../../shared/log.ts';
import type { RedisLink } from '../store/redis.ts';
import { createEndpointStats, type EndpointStatsStore, WINDOW, type Window } from './endpoint-stats.ts';

export const SYNC_MS = 250;
/** Endpoints this gateway shares; past it, new ones are measured here only (model ids come from requests). */
export const MAX_SHARED_ENDPOINTS = 1_000;
const TTL_S = 24 * 3600;
/** A pin outlives any provider-side prompt cache it is there to hit. */
export const PIN_TTL_S = 3600;
export const MAX_LOCAL_PINS = 100_000;

type Queued = Window;
const empty = (): Queued => ({ ttft: [], tps: [], outcomes: [], lastFailure: 0 });
const numbers = (xs: unknown): number[] => (Array.isArray(xs) ? xs.map(Number).filter(Number.isFinite) : []);

export type SharedStats = EndpointStatsStore & {
  /** A failure another gateway announced (access/invalidation.ts): counted here, not shared again. */
  heard(key: string): void;
  /** One exchange with Redis now (the timer's work; tests call it to wait for a sync). */
  sync(): Promise<void>;
  close(): void;
};

export function createSharedStats(o: {
  redis: RedisLink;
  log: Logger;
  /** Key namespace, `cohort:` by default; tests give their own. */
  prefix?: string;
  everyMs?: number;
  now?: () => number;
}): SharedStats {
  const local = createEndpointStats({ now: o.now });
  const prefix = `${o.prefix ?? 'cohort:'}ep:`;
  const index = `${prefix}index`;
  const shared = new Set<string>();
  let queued = new Map<string, Queued>();
  const queue = (key: string): Queued | null => {
    if (!shared.has(key)) {
      if (shared.size >= MAX_SHARED_ENDPOINTS) return null;
      shared.add(key);
    }
    let q = queued.get(key);
    if (!q) queued.set(key, (q = empty()));
    return q;
  };
  let running: Promise<void> | null = null;

  async function exchange(): Promise<void> {
    const link = o.redis;
    if (!link.usable()) return;
    const out = queued;
    queued = new Map();
    const c = link.client;
    try {
      const w = c.pipeline();
      for (const [key, q] of out) {
        const k = prefix + key;
        w.sadd(index, key);
        const lists: [string, (string | number)[]][] = [
          [`${k}:ttft`, q.ttft],
          [`${k}:tps`, q.tps],
          [`${k}:ok`, q.outcomes.map(Number)],
        ];
        for (const [list, xs] of lists)
          if (xs.length)
            w.rpush(list, ...xs)
              .ltrim(list, -WINDOW, -1)
              .expire(list, TTL_S);
        if (q.lastFailure) w.set(`${k}:failed`, q.lastFailure, 'EX', TTL_S);
      }
      w.expire(index, TTL_S);
      w.srandmember(index, MAX_SHARED_ENDPOINTS);
      const wrote = (await w.exec()) ?? [];
      const keys = (wrote.at(-1)?.[1] as string[] | undefined) ?? [];
      if (!keys.length) return;
      const r = c.pipeline();
      for (const key of keys) {
        const k = prefix + key;
        r.lrange(`${k}:ttft`, 0, -1).lrange(`${k}:tps`, 0, -1).lrange(`${k}:ok`, 0, -1).get(`${k}:failed`);
      }
      const got = (await r.exec()) ?? [];
      keys.forEach((key, i) => {
        const [ttft, tps, ok, failed] = got.slice(4 * i, 4 * i + 4).map((x) => (x?.[0] ? null : x?.[1]));
        // What was recorded here while this exchange ran is not in Redis yet.
        const since = queued.get(key) ?? empty();
        local.load(key, {
          ttft: [...numbers(ttft), ...since.ttft],
          tps: [...numbers(tps), ...since.tps],
          outcomes: [...numbers(ok).map((x) => x === 1), ...since.outcomes],
          lastFailure: Math.max(Number(failed) || 0, since.lastFailure),
        });
      });
    } catch (err) {
      link.failed(err);
      o.log.debug({ err }, 'endpoint measurements: redis error; this sync is skipped');
    }
  }
  const sync = () => (running ??= exchange().finally(() => (running = null)));
  const timer = setInterval(() => void sync(), o.everyMs ?? SYNC_MS);
  timer.unref();
  return {
    success(key, m) {
      local.success(key, m);
      const q = queue(key);
      if (!q) return;
      q.ttft.push(Math.round(m.ttftMs * 10) / 10);
      if (m.tps !== null && Number.isFinite(m.tps)) q.tps.push(Math.round(m.tps * 10) / 10);
      q.outcomes.push(true);
    },
    failure(key) {
      local.failure(key);
      const q = queue(key);
      if (!q) return;
      q.outcomes.push(false);
      q.lastFailure = (o.now ?? Date.now)();
    },
    heard: (key) => local.failure(key),
    load: local.load,
    get: local.get,
    sync,
    close: () => clearInterval(timer),
  };
}

/** Compare-and-delete: a pin is released only if it still names the endpoint that failed. */
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

export type SessionPins = {
  /** What a workspace session is pinned to (an endpointKey, or a model for `model` pins), or null. */
  get(session: string): Promise<string | null> | string | null;
  set(session: string, endpoint: string): void;
  /** Drops the pin if it is still `endpoint` (it failed). */
  release(session: string, endpoint: string): void;
};

/** `session` is `<workspace id>\0<session id>`: a session id names a pin only within its own workspace.
 * With Redis, `local` mirrors what this gateway last read or wrote, so a session that stays on its
 * endpoint costs one GET a request and a SET only every half TTL. `kind` keeps the endpoint pins
 * (`pin`, session_id) apart from the router's model pins (`model`, pin_model) of the same session. */
export function createSessionPins(
  o: { redis?: RedisLink; prefix?: string; kind?: 'pin' | 'model'; log?: Logger; now?: () => number } = {},
): SessionPins {
  const now = o.now ?? Date.now;
  const local = new Map<string, { endpoint: string; at: number }>();
  const remember = (session: string, endpoint: string) => {
    local.delete(session);
    if (local.size >= MAX_LOCAL_PINS) local.delete(local.keys().next().value!);
    local.set(session, { endpoint, at: now() });
  };
  const forget = (session: string, endpoint: string) => {
    if (local.get(session)?.endpoint === endpoint) local.delete(session);
  };
  const link = o.redis;
  if (!link) return { get: (s) => local.get(s)?.endpoint ?? null, set: remember, release: forget };
  // Hashed: a session id is up to 256 characters of the client's choosing.
  const keyOf = (session: string) =>
    `${o.prefix ?? 'cohort:'}${o.kind ?? 'pin'}:${createHash('sha256').update(session).digest('base64url')}`;
  const failed = (err: unknown) => {
    link.failed(err);
    o.log?.debug({ err }, 'session pins: redis error; this gateway keeps its own');
  };
  return {
    async get(session) {
      if (link.usable())
        try {
          const endpoint = await link.client.get(keyOf(session));
          const held = local.get(session);
          // Another gateway moved or released it: what is written next must reach Redis.
          if (held && held.endpoint !== endpoint) local.delete(session);
          return endpoint;
        } catch (err) {
          failed(err);
        }
      return local.get(session)?.endpoint ?? null;
    },
    set(session, endpoint) {
      const held = local.get(session);
      if (held?.endpoint === endpoint && now() - held.at < (PIN_TTL_S * 1000) / 2) return;
      remember(session, endpoint);
      if (link.usable()) link.client.set(keyOf(session), endpoint, 'EX', PIN_TTL_S).catch(failed);
    },
    release(session, endpoint) {
      forget(session, endpoint);
      if (link.usable()) link.client.eval(RELEASE, 1, keyOf(session), endpoint).catch(failed);
    },
  };
}
