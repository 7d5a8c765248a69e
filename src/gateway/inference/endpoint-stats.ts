// What this gateway measured of each endpoint (one provider serving one model): time to first
// token and throughput over its last WINDOW answers, and its success rate and last failure over
// its last WINDOW calls. Kept in memory per gateway (with Redis, refreshed from the window all
// gateways share: shared-stats.ts); the provider preferences sort by it (preferences.ts) and
// GET /models shows it. Recording is a few array writes, so it stays off the hot path's cost; the
// medians are computed when read, at most once per change.

export const WINDOW = 50;
/** An endpoint that failed this recently is unhealthy: tried after the healthy ones. */
export const UNHEALTHY_MS = 30_000;

export type EndpointStats = {
  /** Median time to first token, ms; null until measured. */
  ttftMs: number | null;
  /** Median output tokens per second; null until measured. */
  tps: number | null;
  /** Share of the last calls that answered; null until called. */
  successRate: number | null;
  healthy: boolean;
};

const median = (xs: number[]): number | null => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** An endpoint's raw window, as shared-stats.ts exchanges it with the other gateways. */
export type Window = { ttft: number[]; tps: number[]; outcomes: boolean[]; lastFailure: number };

type Ring = { ttft: number[]; tps: number[]; outcomes: boolean[]; lastFailure: number; cached: EndpointStats | null };

export const endpointKey = (provider: string, model: string) => `${provider}\u0000${model}`;

export function createEndpointStats(opts: { now?: () => number } = {}) {
  const now = opts.now ?? Date.now;
  const rings = new Map<string, Ring>();
  const ring = (key: string) => {
    let r = rings.get(key);
    if (!r) rings.set(key, (r = { ttft: [], tps: [], outcomes: [], lastFailure: 0, cached: null }));
    return r;
  };
  const push = <T>(xs: T[], x: T) => {
    xs.push(x);
    if (xs.length > WINDOW) xs.shift();
  };
  const EMPTY: EndpointStats = { ttftMs: null, tps: null, successRate: null, healthy: true };
  return {
    /** An answer: its time to first token and, when it produced tokens, its throughput. */
    success(key: string, o: { ttftMs: number; tps: number | null }) {
      const r = ring(key);
      push(r.ttft, o.ttftMs);
      if (o.tps !== null && Number.isFinite(o.tps)) push(r.tps, o.tps);
      push(r.outcomes, true);
      r.cached = null;
    },
    failure(key: string) {
      const r = ring(key);
      push(r.outcomes, false);
      r.lastFailure = now();
      r.cached = null;
    },
    /** Replaces an endpoint's window by the shared one (each list cut to its last WINDOW). */
    load(key: string, w: Window) {
      const r = ring(key);
      r.ttft = w.ttft.slice(-WINDOW);
      r.tps = w.tps.slice(-WINDOW);
      r.outcomes = w.outcomes.slice(-WINDOW);
      r.lastFailure = Math.max(r.lastFailure, w.lastFailure);
      r.cached = null;
    },
    get(key: string): EndpointStats {
      const r = rings.get(key);
      if (!r) return EMPTY;
      const healthy = now() - r.lastFailure >= UNHEALTHY_MS;
      if (r.cached && r.cached.healthy === healthy) return r.cached;
      r.cached = {
        ttftMs: median(r.ttft),
        tps: median(r.tps),
        successRate: r.outcomes.length ? r.outcomes.filter(Boolean).length / r.outcomes.length : null,
        healthy,
      };
      return r.cached;
    },
  };
}
export type EndpointStatsStore = ReturnType<typeof createEndpointStats>;
