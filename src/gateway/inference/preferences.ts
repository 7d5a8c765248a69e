// Provider preferences: which endpoints (a provider serving a model) a request may use and in
// which order (docs/guides/model-requests.md#provider-preferences). Pure: the endpoints with their
// prices and measured stats in, an ordered list out. Each endpoint keeps its own credential order
// (select.ts, the BYOK rules), which nothing here changes: preferences order providers, never the
// keys within one.
//
//   filters   only, ignore, max_price (USD per million tokens; an endpoint without a price fails it)
//   order     the providers listed in `order` first, in that order; the others after them
//   sort      price (prompt + completion, cheapest first), throughput (fastest output first),
//             latency (lowest time to first token first), exacto (highest measured success rate,
//             then price); unmeasured endpoints after measured ones; without a sort the model's own
//             provider first, then the others by price; ties keep that order
//   health    an endpoint that failed in the last 30 s goes after the healthy ones
//   session   a sticky endpoint (session_id) goes first while it is healthy, unless `order` is given
//   fallbacks allow_fallbacks false: the first endpoint of each model only, with its first credential
//   partition `model` (the default; route: fallback): models in request order, each one's endpoints
//             sorted; `none` (route: sort): every model's endpoints sorted together
import type { ProviderPreferences, ProviderSort } from '../http/request-options.schemas.ts';
import { ROUTE_PARTITION } from '../http/request-options.schemas.ts';
import type { EndpointStats } from './endpoint-stats.ts';
import type { Price } from './prices.ts';

export type Preferences = {
  sort: ProviderSort | null;
  partition: 'model' | 'none';
  order: string[] | null;
  only: string[] | null;
  ignore: string[] | null;
  maxPrice: { prompt?: number; completion?: number } | null;
  allowFallbacks: boolean;
};

export type PreferenceInput = {
  provider?: ProviderPreferences | null;
  speed?: 'fast' | 'standard' | null;
  route?: 'fallback' | 'sort' | null;
};

/** The request's preferences over the workspace's default sort; `speed: fast` sorts by throughput when nothing else sorts. */
export function preferencesOf(body: PreferenceInput, workspaceSort: string | null): Preferences {
  const p = body.provider ?? {};
  const sortObj = typeof p.sort === 'object' && p.sort !== null ? p.sort : null;
  const asked = typeof p.sort === 'string' ? p.sort : (sortObj?.by ?? null);
  const sort = asked ?? (body.speed === 'fast' ? 'throughput' : ((workspaceSort as ProviderSort | null) ?? null));
  const num = (v: number | string | undefined) => (v === undefined ? undefined : Number(v));
  return {
    sort,
    partition: sortObj?.partition ?? (body.route ? ROUTE_PARTITION[body.route] : 'model'),
    order: p.order ?? null,
    only: p.only ?? null,
    ignore: p.ignore ?? null,
    maxPrice: p.max_price
      ? { prompt: num(p.max_price.prompt ?? undefined), completion: num(p.max_price.completion ?? undefined) }
      : null,
    allowFallbacks: p.allow_fallbacks !== false,
  };
}

export type Endpoint<R> = {
  route: R;
  model: string;
  provider: string;
  /** The model's own provider (the prefix of its slug) rather than another that also serves it. */
  primary: boolean;
  price: Price | null;
  stats: EndpointStats;
};

const total = (p: Price | null) => (p ? p.prompt + p.completion : Number.POSITIVE_INFINITY);
/** Lower is better; null (unmeasured) after every measured value. */
function key<R>(e: Endpoint<R>, sort: ProviderSort | null): number {
  const s = e.stats;
  switch (sort) {
    case 'price':
      return total(e.price);
    case 'throughput':
      return s.tps === null ? Number.POSITIVE_INFINITY : -s.tps;
    case 'latency':
      return s.ttftMs ?? Number.POSITIVE_INFINITY;
    case 'exacto':
      return s.successRate === null ? Number.POSITIVE_INFINITY : -s.successRate;
    default:
      return e.primary ? Number.NEGATIVE_INFINITY : total(e.price);
  }
}

export type Arranged<R> = { endpoints: Endpoint<R>[]; excluded: number };

/** Orders one request's endpoints, grouped by model in request order. */
export function arrange<R>(
  byModel: Endpoint<R>[][],
  pref: Preferences,
  sticky?: { provider: string; model: string } | null,
): Arranged<R> {
  // The usual request: one model with one endpoint and nothing to filter by; nothing to order.
  if (byModel.length === 1 && byModel[0]!.length <= 1 && !pref.only && !pref.ignore && !pref.maxPrice)
    return { endpoints: byModel[0]!, excluded: 0 };
  let excluded = 0;
  const keep = (e: Endpoint<R>) => {
    const ok =
      (!pref.only || pref.only.includes(e.provider)) &&
      !pref.ignore?.includes(e.provider) &&
      (!pref.maxPrice ||
        (e.price !== null &&
          (pref.maxPrice.prompt === undefined || e.price.prompt <= pref.maxPrice.prompt) &&
          (pref.maxPrice.completion === undefined || e.price.completion <= pref.maxPrice.completion)));
    if (!ok) excluded++;
    return ok;
  };
  const position = (e: Endpoint<R>) => {
    const i = pref.order?.indexOf(e.provider) ?? -1;
    return i < 0 ? Number.POSITIVE_INFINITY : i;
  };
  const sortOf = (list: Endpoint<R>[]) =>
    list
      .map((e, i) => ({ e, i }))
      .sort(
        (a, b) =>
          position(a.e) - position(b.e) ||
          Number(!a.e.stats.healthy) - Number(!b.e.stats.healthy) ||
          key(a.e, pref.sort) - key(b.e, pref.sort) ||
          (pref.sort === 'exacto' ? total(a.e.price) - total(b.e.price) : 0) ||
          a.i - b.i,
      )
      .map(({ e }) => e);
  const groups = byModel.map((g) => g.filter(keep));
  let out = pref.partition === 'none' ? sortOf(groups.flat()) : groups.flatMap((g) => sortOf(g));
  if (sticky && !pref.order) {
    const at = out.findIndex((e) => e.provider === sticky.provider && e.model === sticky.model && e.stats.healthy);
    if (at > 0) out = [out[at]!, ...out.slice(0, at), ...out.slice(at + 1)];
  }
  if (!pref.allowFallbacks) {
    const seen = new Set<string>();
    out = out.filter((e) => !seen.has(e.model) && seen.add(e.model));
  }
  return { endpoints: out, excluded };
}
