// The router: which model serves a request for the auto model id (`cohort/auto`), from the
// workspace's routable models, the auto-router plugin's settings and the endpoints' health
// (docs/guides/model-requests.md#the-router). Pure and deterministic: the same candidates,
// settings and pin give the same choice.
//
//   candidates   the models GET /models lists for the workspace, but the auto id itself
//   allowed      `allowed_models` patterns (`*` matches any run of characters); absent: every candidate
//   excluded     `excluded_models` patterns, removed after
//   health       models with no healthy endpoint are dropped, unless that leaves none
//   price        models with a known price, cheapest first (ties by id); unpriced ones only when none is priced
//   cost_tier    the position in that order: low the cheapest, medium the median, high the upper
//                quartile, xhigh the 90th percentile, max the dearest (default: medium)
//   fallbacks    the next models by distance from the choice, dearer first on a tie, at most 3
//   pin_model    with a session, the model chosen first for it stays while it is a healthy candidate

export const AUTO_MODEL = 'cohort/auto';

export type RouterSettings = {
  allowed: string[] | null;
  excluded: string[];
  tier: 'low' | 'medium' | 'high' | 'xhigh' | 'max';
  pinned: string | null;
};

export type ModelCandidate = { id: string; price: number | null; healthy: boolean };

const QUANTILE = { low: 0, medium: 0.5, high: 0.75, xhigh: 0.9, max: 1 } as const;

export function matches(pattern: string, id: string): boolean {
  if (!pattern.includes('*')) return pattern === id;
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(id);
}

export function chooseModel(
  candidates: ModelCandidate[],
  s: RouterSettings,
): { model: string; fallbacks: string[]; pinned: boolean } | null {
  const allowed = candidates.filter(
    (c) =>
      c.id !== AUTO_MODEL &&
      (s.allowed === null || s.allowed.some((p) => matches(p, c.id))) &&
      !s.excluded.some((p) => matches(p, c.id)),
  );
  const healthy = allowed.filter((c) => c.healthy);
  const live = healthy.length ? healthy : allowed;
  const priced = live.filter((c) => c.price !== null);
  const pool = (priced.length ? priced : live).sort(
    (a, b) => (a.price ?? 0) - (b.price ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  if (!pool.length) return null;
  const pin = s.pinned === null ? -1 : pool.findIndex((c) => c.id === s.pinned && c.healthy);
  const at = pin >= 0 ? pin : Math.round(QUANTILE[s.tier] * (pool.length - 1));
  const rest = pool
    .map((c, i) => ({ c, d: Math.abs(i - at), i }))
    .filter((x) => x.i !== at)
    .sort((a, b) => a.d - b.d || b.i - a.i)
    .slice(0, 3)
    .map((x) => x.c.id);
  return { model: pool[at]!.id, fallbacks: rest, pinned: pin >= 0 };
}
