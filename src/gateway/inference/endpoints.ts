// The endpoints of a model in a workspace: which provider serves it under which id, with which
// credentials (select.ts), refused by which guardrail; what service.ts routes a request over and
// what the model list and the auto-router see.
import { ApiError, badModelRequest, invalidRequest, resourceNotFound } from '../errors.ts';
import type { Principal } from '../access/identity-store.ts';
import {
  providerVar,
  splitModel,
  selectCredentials,
  type PriceTable,
  type ProviderInfo,
  type ProviderTable,
  type Registry,
} from './providers/index.ts';
import { priceOf } from './prices.ts';
import { endpointKey, type EndpointStatsStore } from './endpoint-stats.ts';
import { arrange, type Endpoint, preferencesOf } from './preferences.ts';
import type { CredentialRow, WorkspaceRouting } from './routing-config.ts';
import { AUTO_MODEL } from './router.ts';
import { SCRIPTED } from './model-list.ts';
import { guardrailRefusal } from './guardrail.ts';
import type { Route } from './attempts.ts';

const dataCollectionRefused = (slug: string) =>
  `provider ${slug}'s shared endpoint may log or train on prompts (${providerVar(slug, 'DATA_COLLECTION')}=allow) and this workspace does not allow that: turn on is_data_discount_logging_enabled, or add a BYOK credential for ${slug}`;

const providerNotConfigured = (slug: string) =>
  invalidRequest(
    `model: provider ${slug} is not configured on this gateway: its operator sets ${providerVar(slug, 'BASE_URL')} or ${providerVar(slug, 'API_KEY')}, or the workspace adds a BYOK credential for it`,
  );

export type RouteCtx = {
  principal: Principal;
  credentials: ReadonlyMap<string, CredentialRow[]>;
  requireZdr: boolean;
  /** The workspace's is_data_discount_logging_enabled: shared endpoints that collect data are usable. */
  dataCollection: boolean;
};

export type Routable = { id: string; endpoints: Endpoint<Route>[] };

export type Endpoints = ReturnType<typeof createEndpoints>;

export function createEndpoints(o: {
  registry: Registry;
  providers: ProviderTable;
  prices: PriceTable;
  stats: EndpointStatsStore;
}) {
  const { registry, providers, prices } = o;
  /** Other providers that serve a model (COHORT_PROVIDER_<SLUG>_MODELS), by model. */
  const servedBy = new Map<string, ProviderInfo[]>();
  for (const info of providers.values())
    for (const m of info.serves.keys()) servedBy.set(m, [...(servedBy.get(m) ?? []), info]);

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

  function routeFor(model: string, ctx: RouteCtx): Route | ApiError {
    const split = splitModel(model, providers);
    if (!split?.model) throw invalidRequest(`model: ${model} names no known provider (expected provider/model)`);
    return routeAt(model, split.provider, split.model, ctx, true);
  }

  /** Every endpoint of a model in this workspace: its own provider's, then other providers that the
   * operator says serve it, or for which the workspace holds a credential naming it in allowed_models
   * (those serve it with the workspace's credentials only). The first refusal is kept for when none is left. */
  function endpointsFor(model: string, ctx: RouteCtx): { endpoints: Endpoint<Route>[]; refusal: ApiError | null } {
    const split = splitModel(model, providers);
    if (!split?.model) throw invalidRequest(`model: ${model} names no known provider (expected provider/model)`);
    const own = routeAt(model, split.provider, split.model, ctx, true);
    const endpoint = (route: Route, primary: boolean): Endpoint<Route> => ({
      route,
      model,
      provider: route.provider.slug,
      primary,
      price: priceOf(prices, model, route.provider.slug),
      stats: o.stats.get(endpointKey(route.provider.slug, model)),
    });
    const endpoints = own instanceof ApiError ? [] : [endpoint(own, true)];
    const others = new Map<string, { info: ProviderInfo; id: string; shared: boolean }>();
    for (const info of servedBy.get(model) ?? [])
      if (info.slug !== split.provider.slug) others.set(info.slug, { info, id: info.serves.get(model)!, shared: true });
    for (const [slug, creds] of ctx.credentials) {
      const info = providers.get(slug);
      if (!info || slug === split.provider.slug || others.has(slug)) continue;
      if (creds.some((c) => !c.disabled && c.allowedModels?.includes(model)))
        others.set(slug, { info, id: split.model, shared: false });
    }
    for (const other of others.values()) {
      try {
        const r = routeAt(model, other.info, other.id, ctx, other.shared);
        if (!(r instanceof ApiError)) endpoints.push(endpoint(r, false));
      } catch {
        // A provider that cannot serve here is no endpoint; the model's own refusal is what is reported.
      }
    }
    return { endpoints, refusal: own instanceof ApiError ? own : null };
  }

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
