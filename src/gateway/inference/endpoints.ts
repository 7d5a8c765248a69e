// A model's endpoints in one workspace: its own provider's, then the other providers that the
// operator says serve it (COHORT_PROVIDER_<SLUG>_MODELS), or for which the workspace holds a
// credential naming it in allowed_models (those serve it with the workspace's credentials only);
// each with its route (the credentials that may serve this request, select.ts), price and
// measured stats (docs/guides/model-requests.md#provider-preferences).
//
// This runs for every model request, so what does not change between requests is worked out once:
// per workspace snapshot (routing-config.ts replaces it on every change and refresh) and model,
// the providers, their model ids, prices and stats keys; per API key of that snapshot, the routes
// (they depend on the key's user, hash and guardrail, the request's ZDR requirement and the
// workspace's data-collection switch, all compared before one is reused). A request then only
// reads each endpoint's stats. A model whose own provider refuses the request is worked out again
// each time (rare), so no refusal is kept.
import { ApiError, badModelRequest, invalidRequest, resourceNotFound } from '../errors.ts';
import type { Principal } from '../access/identity-store.ts';
import type { Route } from './attempts.ts';
import type { EndpointStatsStore } from './endpoint-stats.ts';
import { endpointKey } from './endpoint-stats.ts';
import { guardrailRefusal } from './guardrail.ts';
import type { Endpoint } from './preferences.ts';
import { type Price, type PriceTable, priceOf } from './prices.ts';
import type { ProviderInfo, ProviderTable, Registry } from './providers/index.ts';
import { providerVar, selectCredentials, splitModel } from './providers/index.ts';
import type { CredentialRow, WorkspaceRouting } from './routing-config.ts';
import { arrange, preferencesOf } from './preferences.ts';
import { AUTO_MODEL } from './router.ts';
import { SCRIPTED } from './model-list.ts';

export type RouteCtx = {
  principal: Principal;
  credentials: ReadonlyMap<string, CredentialRow[]>;
  requireZdr: boolean;
  /** The workspace's is_data_discount_logging_enabled: shared endpoints that collect data are usable. */
  dataCollection: boolean;
};

export type Routable = { id: string; endpoints: Endpoint<Route>[] };

export type Endpoints = ReturnType<typeof createEndpoints>;

/** Models planned per workspace snapshot, and keys per model, before the cache starts over
 * (model ids and keys come from requests). */
const MAX_PLANS = 1_000;
const MAX_KEYS = 1_000;

/** One provider serving the model: `id` is its own name for it; `shared`: its operator key may serve it. */
type Target = { info: ProviderInfo; id: string; shared: boolean; primary: boolean; price: Price | null; key: string };
type Routed = {
  guardrail: Principal['guardrail'];
  userId: string;
  requireZdr: boolean;
  dataCollection: boolean;
  routes: { route: Route; target: Target }[];
};
type Plan = { targets: Target[]; byKey: Map<string, Routed> };

const dataCollectionRefused = (slug: string) =>
  `provider ${slug}'s shared endpoint may log or train on prompts (${providerVar(slug, 'DATA_COLLECTION')}=allow) and this workspace does not allow that: turn on is_data_discount_logging_enabled, or add a BYOK credential for ${slug}`;

const providerNotConfigured = (slug: string) =>
  invalidRequest(
    `model: provider ${slug} is not configured on this gateway: its operator sets ${providerVar(slug, 'BASE_URL')} or ${providerVar(slug, 'API_KEY')}, or the workspace adds a BYOK credential for it`,
  );

export function createEndpoints(o: {
  providers: ProviderTable;
  registry: Registry;
  prices: PriceTable;
  stats: EndpointStatsStore;
}) {
  const { providers, registry, prices, stats } = o;
  /** Other providers that serve a model (COHORT_PROVIDER_<SLUG>_MODELS), by model. */
  const servedBy = new Map<string, ProviderInfo[]>();
  for (const info of providers.values())
    for (const m of info.serves.keys()) servedBy.set(m, [...(servedBy.get(m) ?? []), info]);
  const plans = new WeakMap<RouteCtx['credentials'], Map<string, Plan>>();

  /** One endpoint: `provider` serving `model` as `providerModel`; `shared`: its operator key may serve it. */
  function routeAt(
    model: string,
    provider: ProviderInfo,
    providerModel: string,
    ctx: RouteCtx,
    shared: boolean,
  ): Route | ApiError {
    const refusal = guardrailRefusal(ctx.principal.guardrail, { model, provider: provider.slug });
    if (refusal) return refusal;
    const adapter = registry.adapter(provider.kind);
    if (adapter.hasModel && !adapter.hasModel(providerModel)) throw resourceNotFound(`model ${model}`);
    const credentials = ctx.credentials.get(provider.slug) ?? [];
    // Nothing is connected to for a provider the operator did not configure and the workspace has no key for.
    if (!provider.configured && !credentials.some((c) => !c.disabled)) throw providerNotConfigured(provider.slug);
    if (!provider.baseUrl && provider.kind !== 'local')
      throw invalidRequest(
        `model: provider ${provider.slug} has no endpoint configured (${providerVar(provider.slug, 'BASE_URL')})`,
      );
    const operatorKey = shared && (provider.keyless || provider.sharedKey !== null);
    const withheld = operatorKey && provider.collectsData && !ctx.dataCollection;
    const sel = selectCredentials({
      provider: { slug: provider.slug, shared: operatorKey && !withheld, zdr: provider.zdr },
      model,
      userId: ctx.principal.userId,
      keyHash: ctx.principal.keyHash,
      requireZdr: ctx.requireZdr,
      credentials,
    });
    if (!sel.ok && withheld && sel.why === 'no_credential')
      return badModelRequest(dataCollectionRefused(provider.slug));
    if (!sel.ok) return badModelRequest(sel.message);
    return { model, provider, providerModel, adapter, candidates: sel.candidates, credentials };
  }

  function split(model: string) {
    const s = splitModel(model, providers);
    if (!s?.model) throw invalidRequest(`model: ${model} names no known provider (expected provider/model)`);
    return s;
  }

  function routeFor(model: string, ctx: RouteCtx): Route | ApiError {
    const s = split(model);
    return routeAt(model, s.provider, s.model, ctx, true);
  }

  function planFor(model: string, credentials: RouteCtx['credentials']): Plan {
    let byModel = plans.get(credentials);
    if (!byModel) plans.set(credentials, (byModel = new Map()));
    const known = byModel.get(model);
    if (known) return known;
    const s = split(model);
    const target = (info: ProviderInfo, id: string, shared: boolean, primary: boolean): Target => ({
      info,
      id,
      shared,
      primary,
      price: priceOf(prices, model, info.slug),
      key: endpointKey(info.slug, model),
    });
    const targets = [target(s.provider, s.model, true, true)];
    const seen = new Set([s.provider.slug]);
    for (const info of servedBy.get(model) ?? [])
      if (!seen.has(info.slug)) {
        seen.add(info.slug);
        targets.push(target(info, info.serves.get(model)!, true, false));
      }
    for (const [slug, creds] of credentials) {
      const info = providers.get(slug);
      if (!info || seen.has(slug)) continue;
      if (creds.some((c) => !c.disabled && c.allowedModels?.includes(model))) {
        seen.add(slug);
        targets.push(target(info, s.model, false, false));
      }
    }
    if (byModel.size >= MAX_PLANS) byModel.clear();
    const plan = { targets, byKey: new Map<string, Routed>() };
    byModel.set(model, plan);
    return plan;
  }

  /** Every endpoint of a model in this workspace, own provider's first. The own provider's refusal is
   * kept for when no endpoint is left. */
  function endpointsFor(model: string, ctx: RouteCtx): { endpoints: Endpoint<Route>[]; refusal: ApiError | null } {
    const plan = planFor(model, ctx.credentials);
    const p = ctx.principal;
    let routed = plan.byKey.get(p.keyHash);
    if (
      !routed ||
      routed.guardrail !== p.guardrail ||
      routed.userId !== p.userId ||
      routed.requireZdr !== ctx.requireZdr ||
      routed.dataCollection !== ctx.dataCollection
    ) {
      const own = plan.targets[0]!;
      const first = routeAt(model, own.info, own.id, ctx, own.shared);
      const routes: Routed['routes'] = first instanceof ApiError ? [] : [{ route: first, target: own }];
      for (const t of plan.targets.slice(1)) {
        try {
          const r = routeAt(model, t.info, t.id, ctx, t.shared);
          if (!(r instanceof ApiError)) routes.push({ route: r, target: t });
        } catch {
          // A provider that cannot serve here is no endpoint; the model's own refusal is what is reported.
        }
      }
      if (first instanceof ApiError) return { endpoints: routes.map((r) => endpointOf(model, r)), refusal: first };
      routed = {
        guardrail: p.guardrail,
        userId: p.userId,
        requireZdr: ctx.requireZdr,
        dataCollection: ctx.dataCollection,
        routes,
      };
      if (plan.byKey.size >= MAX_KEYS) plan.byKey.clear();
      plan.byKey.set(p.keyHash, routed);
    }
    const endpoints: Endpoint<Route>[] = [];
    for (const r of routed.routes) endpoints.push(endpointOf(model, r));
    return { endpoints, refusal: null };
  }

  const endpointOf = (model: string, { route, target }: Routed['routes'][number]): Endpoint<Route> => ({
    route,
    model,
    provider: target.info.slug,
    primary: target.primary,
    price: target.price,
    stats: stats.get(target.key),
  });

  /** What a workspace can route to: the built-in model, priced models, models other providers
   * serve, the workspace's default and its credentials' allowed models, each with the endpoints a
   * request for it would find, in the order a request without preferences tries them. */
  function routable(space: WorkspaceRouting, principal: Principal): Routable[] {
    const ws = space.workspace!;
    const named = [...space.credentials.values()].flat().flatMap((c) => (c.disabled ? [] : (c.allowedModels ?? [])));
    const ids = new Set<string>([
      SCRIPTED,
      ...[...prices.keys()].filter((k) => !k.includes('@')),
      ...servedBy.keys(),
      ...(ws.defaultTextModel && ws.defaultTextModel !== AUTO_MODEL ? [ws.defaultTextModel] : []),
      ...named,
    ]);
    const ctx = {
      principal,
      credentials: space.credentials,
      requireZdr: principal.guardrail?.enforceZdr === true,
      dataCollection: ws.isDataDiscountLoggingEnabled,
    };
    const defaults = preferencesOf({}, ws.defaultProviderSort);
    const out: Routable[] = [];
    for (const id of [...ids].sort((a, b) => (a === SCRIPTED ? -1 : b === SCRIPTED ? 1 : a.localeCompare(b)))) {
      try {
        const endpoints = arrange([endpointsFor(id, ctx).endpoints], defaults).endpoints;
        if (endpoints.length) out.push({ id, endpoints });
      } catch {
        // not routable here
      }
    }
    return out;
  }

  return { routeFor, endpointsFor, routable };
}
