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
  if (!body.provider && !body.speed && !body.route) {
    // Most requests name none: one shared, frozen answer per workspace sort.
    let plain = PLAIN.get(workspaceSort);
    if (!plain) PLAIN.set(workspaceSort, (plain = Object.freeze(build({}, workspaceSort))));
    return plain;
  }
  return build(body, workspaceSort);
}

const PLAIN = new Map<string | null, Preferences>();

function build(body: PreferenceInput, workspaceSort: string | null): Preferences {
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

function passes<R>(e: Endpoint<R>, pref: Preferences): boolean {
  const max = pref.maxPrice;
  return (
    (!pref.only || pref.only.includes(e.provider)) &&
    !pref.ignore?.includes(e.provider) &&
    (!max ||
      (e.price !== null &&
        (max.prompt === undefined || e.price.prompt <= max.prompt) &&
        (max.completion === undefined || e.price.completion <= max.completion)))
  );
}

const position = <R>(e: Endpoint<R>, order: string[] | null) => {
  const i = order ? order.indexOf(e.provider) : -1;
  return i < 0 ? Number.POSITIVE_INFINITY : i;
};

/** Negative when `a` goes before `b`; 0 keeps their order. */
function compare<R>(a: Endpoint<R>, b: Endpoint<R>, pref: Preferences): number {
  return (
    position(a, pref.order) - position(b, pref.order) ||
    Number(!a.stats.healthy) - Number(!b.stats.healthy) ||
    key(a, pref.sort) - key(b, pref.sort) ||
    (pref.sort === 'exacto' ? total(a.price) - total(b.price) : 0)
  );
}

/** Sorts `xs[from..]` in place, stably: an insertion sort, since a model has a handful of endpoints
 * and this runs for every request (no closures, no copies). */
function sortFrom<R>(xs: Endpoint<R>[], from: number, pref: Preferences) {
  for (let i = from + 1; i < xs.length; i++) {
    const e = xs[i]!;
    let j = i - 1;
    while (j >= from && compare(xs[j]!, e, pref) > 0) {
      xs[j + 1] = xs[j]!;
      j--;
    }
    xs[j + 1] = e;
  }
}

/** Orders one request's endpoints, grouped by model in request order. */
export function arrange<R>(
  byModel: Endpoint<R>[][],
  pref: Preferences,
  sticky?: { provider: string; model: string } | null,
): Arranged<R> {
  const filtering = pref.only !== null || pref.ignore !== null || pref.maxPrice !== null;
  // The usual request: one model with one endpoint and nothing to filter by; nothing to order.
  if (byModel.length === 1 && byModel[0]!.length <= 1 && !filtering) return { endpoints: byModel[0]!, excluded: 0 };
  let excluded = 0;
  let out: Endpoint<R>[] = [];
  for (const group of byModel) {
    const from = out.length;
    for (const e of group)
      if (!filtering || passes(e, pref)) out.push(e);
      else excluded++;
    if (pref.partition === 'model') sortFrom(out, from, pref);
  }
  if (pref.partition === 'none') sortFrom(out, 0, pref);
  if (sticky && !pref.order) {
    let at = 0;
    while (at < out.length && !(out[at]!.provider === sticky.provider && out[at]!.model === sticky.model)) at++;
    const e = out[at];
    if (e?.stats.healthy) {
      for (let i = at; i > 0; i--) out[i] = out[i - 1]!;
      out[0] = e;
    }
  }
  if (!pref.allowFallbacks) {
    const seen = new Set<string>();
    out = out.filter((e) => !seen.has(e.model) && seen.add(e.model));
  }
  return { endpoints: out, excluded };
}
