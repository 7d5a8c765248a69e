// What this gateway measured of each endpoint (one provider serving one model): time to first
// token and throughput over its last WINDOW answers, and its success rate and last failure over
// its last WINDOW calls. Kept in memory per gateway (with Redis, refreshed from the window all
// gateways share: shared-stats.ts); the provider preferences sort by it (preferences.ts) and
// GET /models shows it. Every answer records a sample and the next request reads the medians, so
// both stay cheap: each window keeps a sorted copy beside its ring, updated by one insertion and
// one removal (no copy, no sort), the median is read from its middle and the success count is
// kept as it goes; a read builds the stats object only when something changed.
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

/** An endpoint's raw window, as shared-stats.ts exchanges it with the other gateways. */
export type Window = { ttft: number[]; tps: number[]; outcomes: boolean[]; lastFailure: number };

/** The last WINDOW values in arrival order, and the same values sorted. */
type Series = { ring: number[]; sorted: number[] };

/** The first index in `xs` (ascending) whose value is not below `x`. */
function lowerBound(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function add(s: Series, x: number) {
  if (s.ring.length >= WINDOW) {
    const gone = s.ring.shift()!;
    s.sorted.splice(lowerBound(s.sorted, gone), 1);
  }
  s.ring.push(x);
  s.sorted.splice(lowerBound(s.sorted, x), 0, x);
}

const seriesOf = (xs: number[]): Series => {
  const ring = xs.slice(-WINDOW);
  return { ring, sorted: [...ring].sort((a, b) => a - b) };
};

function median({ sorted }: Series): number | null {
  const n = sorted.length;
  if (!n) return null;
  const mid = n >> 1;
  return n % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

type Ring = {
  ttft: Series;
  tps: Series;
  outcomes: boolean[];
  /** How many of `outcomes` are true. */
  ok: number;
  lastFailure: number;
  cached: EndpointStats | null;
};

export const endpointKey = (provider: string, model: string) => `${provider}\u0000${model}`;

export function createEndpointStats(opts: { now?: () => number } = {}) {
  const now = opts.now ?? Date.now;
  const rings = new Map<string, Ring>();
  const ring = (key: string) => {
    let r = rings.get(key);
    if (!r)
      rings.set(
        key,
        (r = { ttft: seriesOf([]), tps: seriesOf([]), outcomes: [], ok: 0, lastFailure: 0, cached: null }),
      );
    return r;
  };
  const outcome = (r: Ring, ok: boolean) => {
    if (r.outcomes.length >= WINDOW && r.outcomes.shift()) r.ok--;
    r.outcomes.push(ok);
    if (ok) r.ok++;
  };
  const EMPTY: EndpointStats = { ttftMs: null, tps: null, successRate: null, healthy: true };
  return {
    /** An answer: its time to first token and, when it produced tokens, its throughput. */
    success(key: string, o: { ttftMs: number; tps: number | null }) {
      const r = ring(key);
      add(r.ttft, o.ttftMs);
      if (o.tps !== null && Number.isFinite(o.tps)) add(r.tps, o.tps);
      outcome(r, true);
      r.cached = null;
    },
    failure(key: string) {
      const r = ring(key);
      outcome(r, false);
      r.lastFailure = now();
      r.cached = null;
    },
    /** Replaces an endpoint's window by the shared one (each list cut to its last WINDOW). */
    load(key: string, w: Window) {
      const r = ring(key);
      r.ttft = seriesOf(w.ttft);
      r.tps = seriesOf(w.tps);
      r.outcomes = w.outcomes.slice(-WINDOW);
      r.ok = r.outcomes.filter(Boolean).length;
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
        successRate: r.outcomes.length ? r.ok / r.outcomes.length : null,
        healthy,
      };
      return r.cached;
    },
  };
}
export type EndpointStatsStore = ReturnType<typeof createEndpointStats>;
