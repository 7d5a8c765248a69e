// The inference router as a service: prepare() validates and resolves a model request (preset,
// model, fallbacks, server-tool restrictions, credentials) before any byte is written; stream()
// and complete() then try its routes, add cost to usage, and record the request in the log. A
// request that names server tools is handed to the agent loop (tools/loop.ts), which makes its
// turns through the same stream() and complete(), each recorded as a step of the generation.
import { uuidv7 } from '../crypto/uuid7.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { Principal } from '../access/identity-store.ts';
import { ApiError, invalidRequest, noUsableCredential, keyWorkspaceDeleted, serverToolDisabled } from '../errors.ts';
import { createRegistry, providerTable, loadPriceTable, costOf } from './providers/index.ts';
import { createEndpointStats, endpointKey } from './endpoint-stats.ts';
import { createSessionPins, createSharedStats } from './shared-stats.ts';
import type { RedisLink } from '../store/redis.ts';
import { arrange, type Endpoint, preferencesOf } from './preferences.ts';
import { createEndpoints } from './endpoints.ts';
import type { Cancel, ChatChunk, ChatRequest, Completion, Usage } from './types.ts';
import { createRoutingConfig, type RoutingConfig, type WorkspaceRouting } from './routing-config.ts';
import {
  applyPreset,
  disabledToolIn,
  PRESET_PREFIX,
  presetSlugOf,
  resolveRequest,
  type RequestBody,
} from './routing.ts';
import { AUTO_MODEL, chooseModel } from './router.ts';
import { ROUTER_PLUGIN, type RouterPlugin } from '../http/request-options.schemas.ts';
import { tryRoutes, type Route, type Served } from './attempts.ts';
import { createRequestLog, shouldStoreBodies, type RequestLogOptions } from './request-log.ts';
import { recordedStream, type Outcome, rowOf } from './record.ts';
import type { InvalidationBus } from '../access/invalidation.ts';
import { modelEntry, SCRIPTED, type ModelEntry } from './model-list.ts';
import type { ConcurrencyLimiter } from '../access/concurrency.ts';
import type { Ledger } from '../access/budgets.ts';
import { completeWithLoop, type LoopDeps, type LoopPlan, planLoop, streamLoop } from './tools/loop.ts';
import { generateImage } from './tools/images.ts';
import { noServerTools } from './tools/env.ts';
import type { ToolsEnv } from './tools/types.ts';
import type { SandboxHost } from './tools/sandbox.ts';
import { observationOf, type Observation } from '../observability/observation.ts';
import type { Broadcaster } from '../observability/broadcast.ts';
import { broadcastsOf } from '../observability/emit.ts';

export type ApiStyle = 'chat' | 'messages' | 'responses';

const pinOf = (served: { provider: string; model: string }) => endpointKey(served.provider, served.model);

export type Prepared = {
  id: string;
  started: number;
  style: ApiStyle;
  stream: boolean;
  principal: Principal;
  requestedModel: string | null;
  routes: Route[];
  upstream: ChatRequest;
  /** How the endpoints were ordered, for the log and the x-cohort-route header: `sort=price; session=sticky`. */
  routing: string;
  /** The workspace's session (session_id) whose endpoint is kept while it stays healthy. */
  sessionKey: string | null;
  /** The client's body as received, kept only when the workspace logs this request's I/O. */
  loggedBody: unknown;
  /** Its session, end user and metadata (observation.ts), recorded and broadcast. */
  observation?: Observation;
  /** Whether its workspace broadcasts (is_observability_broadcast_enabled). */
  broadcast?: boolean;
  /** The server-tool loop, for a request that names server tools (tools/loop.ts). */
  loop?: LoopPlan;
  /** A turn of a loop (or a tool's model request): its row is `<id>-<step>`, a step of generation `id`. */
  step?: number;
};

export type InferenceOptions = {
  db: Db;
  log: Logger;
  sealer: Sealer;
  routingCacheMs: number;
  upstreamTimeoutMs: number;
  providerEnv: Record<string, string | undefined>;
  priceTableFile?: string;
  /** With REDIS_URL: management writes in any gateway drop this one's routing cache too. */
  bus?: InvalidationBus;
  /** With REDIS_URL: endpoint measurements and session pins shared by the gateways (shared-stats.ts). */
  redis?: RedisLink;
  /** Where request-log rows spill, their memory bound, and what is told of lost rows and failed writes. */
  requestLog?: Omit<RequestLogOptions, 'db' | 'log'>;
  /** Told of each upstream attempt that failed at a provider (the metrics count them). */
  onUpstreamError?: (provider: string) => void;
  /** The operator's server-tool settings (tools/env.ts); unset: tools that need configuration are refused. */
  tools?: ToolsEnv;
  /** The ephemeral sandboxes of bash, shell and apply_patch (tools/sandbox.ts); null: not here. */
  sandboxHost?: SandboxHost | null;
  /** Model-request slots, taken by the tools' calls made side by side (fusion). */
  slots?: ConcurrencyLimiter;
  /** Spending limits (access/budgets.ts): a request is admitted in prepare and settled when recorded. */
  ledger?: Ledger;
  /** Spans of broadcasting workspaces (docs/guides/observability.md). */
  broadcast?: Broadcaster;
};

export type InferenceService = ReturnType<typeof createInferenceService>;

export function createInferenceService(opts: InferenceOptions) {
  const registry = createRegistry({ timeoutMs: opts.upstreamTimeoutMs });
  const providers = providerTable(opts.providerEnv);
  const prices = loadPriceTable(opts.priceTableFile);
  const config: RoutingConfig = createRoutingConfig({ db: opts.db, ttlMs: opts.routingCacheMs });
  const requestLog = createRequestLog({ db: opts.db, log: opts.log, ...opts.requestLog });
  const toolsEnv = opts.tools ?? noServerTools();
  opts.bus?.subscribe('routing', () => config.invalidate());
  const shared = opts.redis ? createSharedStats({ redis: opts.redis, log: opts.log }) : null;
  const stats_ = shared ?? createEndpointStats();
  /** This gateway, on the endpoints channel: its own announcements are already counted. */
  const instance = uuidv7();
  /** A failure of an endpoint's shared capacity, counted here and announced to the other gateways. */
  const endpointFailed = (key: string) => {
    stats_.failure(key);
    opts.bus
      ?.publish('endpoints', JSON.stringify([instance, key]))
      .catch((err: Error) => opts.log.debug({ err }, 'could not announce an endpoint failure'));
  };
  opts.bus?.subscribe('endpoints', (message) => {
    if (!message) return;
    try {
      const [from, key] = JSON.parse(message) as [string, string];
      if (from !== instance && typeof key === 'string') shared ? shared.heard(key) : stats_.failure(key);
    } catch {
      // not ours to read
    }
  });
  const { routeFor, endpointsFor, servedModels } = createEndpoints({ providers, registry, prices, stats: stats_ });
  /** session → the endpoint that last served it (endpointKey). */
  const sessions = createSessionPins({ redis: opts.redis, log: opts.log });
  const stick = (key: string | null, served: Served) => {
    if (key) sessions.set(key, pinOf(served));
  };
  /** session → the model the router pinned for it (pin_model), shared like the endpoint pins. */
  const modelPins = createSessionPins({ redis: opts.redis, log: opts.log, kind: 'model' });

  const usageOf = (u: Usage | null | undefined, served: Served): Usage => {
    const usage = u ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const details = usage.prompt_tokens_details;
    // Fields by name, then the provider's others: spreading a parsed object costs ~2 µs, per request.
    const out: Usage = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      prompt_tokens_details: details ? { ...details, cached_tokens: details.cached_tokens ?? 0 } : { cached_tokens: 0 },
      cost: costOf(prices, served.model, usage, served.provider),
      is_byok: served.isByok,
    };
    for (const k in usage) if (!(k in out)) (out as Record<string, unknown>)[k] = (usage as Record<string, unknown>)[k];
    return out;
  };

  async function prepare(o: {
    principal: Principal;
    body: RequestBody;
    style: ApiStyle;
    raw: unknown;
    /** The x-session-id header; the body's session_id wins over it. */
    sessionHeader?: string;
  }): Promise<Prepared> {
    const started = performance.now();
    const { principal } = o;
    const space = await config.workspace({ orgId: principal.orgId, workspaceId: principal.workspaceId });
    const ws = space.workspace;
    // Without its workspace a request would bypass that workspace's policy (credentials, disabled tools, logging).
    if (!ws) throw keyWorkspaceDeleted('workspace');
    // An intern's key is served with the intern's model (or preset), whatever its agent names.
    const asked = principal.internId
      ? {
          ...o.body,
          model: principal.internModel ?? ws.defaultTextModel ?? 'local/scripted',
          models: undefined,
          fallbacks: undefined,
        }
      : o.body;
    const slug = presetSlugOf(asked);
    const merged = slug ? applyPreset(asked, await config.preset({ workspaceId: ws.id, slug })) : asked;
    const session = merged.session_id ?? o.sessionHeader ?? null;
    const sessionKey = session ? `${ws.id}\u0000${session}` : null;
    // Asked now, awaited after routing: with Redis, its GET shares a round trip with the model pin's.
    const pinRead = sessionKey ? sessions.get(sessionKey) : null;
    const named = merged.model && !merged.model.startsWith(PRESET_PREFIX) ? merged.model : ws.defaultTextModel;
    let body = merged;
    let auto: string | null = null;
    if (named === AUTO_MODEL) ({ body, note: auto } = await routeAuto({ body: merged, space, principal, sessionKey }));
    else {
      const i = (merged.plugins ?? []).findIndex((p) => p.id === ROUTER_PLUGIN && p.enabled !== false);
      if (i >= 0)
        throw invalidRequest(
          `plugins.${i}: the auto-router plugin chooses the model of ${AUTO_MODEL} requests, and this one names ${named ?? 'no model'}`,
        );
    }
    const observation = observationOf({ raw: body, sessionHeader: o.sessionHeader, style: o.style });
    const resolved = resolveRequest(body, { defaultModel: ws.defaultTextModel });
    // A guardrail that enforces ZDR makes every request of its keys a `zdr` one.
    const requireZdr = resolved.requireZdr || principal.guardrail?.enforceZdr === true;
    const disabled = disabledToolIn(resolved.serverTools, ws.disabledServerTools);
    if (disabled) throw serverToolDisabled(disabled);
    const loop = resolved.serverTools.length
      ? planLoop({
          body,
          rawTools: body.tools,
          env: toolsEnv,
          workspace: { defaultImageModel: ws.defaultImageModel ?? null, disabled: ws.disabledServerTools ?? [] },
          routesFor: (model) => {
            const r = routeFor(model, {
              principal,
              credentials: space.credentials,
              requireZdr,
              dataCollection: ws.isDataDiscountLoggingEnabled,
            });
            if (r instanceof ApiError) throw r;
            return [r];
          },
        })
      : undefined;
    const ctx = {
      principal,
      credentials: space.credentials,
      requireZdr,
      dataCollection: ws.isDataDiscountLoggingEnabled,
    };
    const found = resolved.models.map((m) => endpointsFor(m, ctx));
    const pref = preferencesOf(body, ws.defaultProviderSort);
    const pinned = await pinRead;
    const at = pinned ? pinned.indexOf('\u0000') : -1;
    const sticky = at > 0 ? { provider: pinned!.slice(0, at), model: pinned!.slice(at + 1) } : null;
    const arranged = arrange(
      found.map((f) => f.endpoints),
      pref,
      sticky,
    );
    if (!arranged.endpoints.length) {
      if (arranged.excluded)
        throw invalidRequest(
          `provider: no endpoint of ${resolved.models.join(', ')} meets the provider preferences (only, ignore, max_price)`,
        );
      throw found.find((f) => f.refusal)?.refusal ?? noUsableCredential();
    }
    const routes = arranged.endpoints.map((e) =>
      pref.allowFallbacks ? e.route : { ...e.route, candidates: e.route.candidates.slice(0, 1) },
    );
    const first = arranged.endpoints[0]!;
    // Concatenated, not joined from arrays: this runs for every model request.
    let routing = `${auto ? `${auto}; ` : ''}sort=${pref.sort ?? 'default'}`;
    if (pref.order) routing += '; order';
    if (!pref.allowFallbacks) routing += '; no-fallbacks';
    if (sessionKey)
      routing += `; session=${sticky && sticky.provider === first.provider && sticky.model === first.model ? 'sticky' : 'new'}`;
    const io = {
      enabled: ws.isObservabilityIoLoggingEnabled,
      samplingRate: ws.ioLoggingSamplingRate,
      apiKeyIds: ws.ioLoggingApiKeyIds ?? null,
    };
    const id = `gen-${uuidv7()}`;
    // The last check, before any upstream call: a spent budget is refused (402) here.
    if (principal.budgets.length && opts.ledger) await opts.ledger.admit({ requestId: id, scopes: principal.budgets });
    return {
      id,
      started,
      style: o.style,
      stream: o.body.stream === true,
      principal,
      requestedModel: o.body.model ?? null,
      routes,
      routing,
      sessionKey,
      upstream: resolved.upstream,
      loggedBody: shouldStoreBodies(io, { apiKeyId: principal.keyId, random: Math.random() }) ? o.raw : undefined,
      observation,
      broadcast: ws.isObservabilityBroadcastEnabled,
      loop,
    };
  }

  const spans = broadcastsOf(opts.broadcast);
  const record = (p: Prepared, outcome: Outcome) => {
    if (p.principal.budgets.length)
      opts.ledger?.settle({
        requestId: p.id,
        scopes: p.principal.budgets,
        cost: outcome.usage?.cost ?? 0,
        isByok: outcome.served?.isByok ?? false,
      });
    const row =
      p.step === undefined
        ? rowOf(p, outcome)
        : { ...rowOf(p, outcome), id: `${p.id}-${p.step}`, generationId: p.id, step: p.step };
    requestLog.add(row);
    if (p.broadcast) spans.model(row, p.observation);
  };
  const attempt = <T>(p: Prepared, cancel: Cancel, run: Parameters<typeof tryRoutes<T>>[0]['run']) => {
    const stats = { attempts: 0 };
    return tryRoutes({
      routes: p.routes,
      body: p.upstream,
      cancel,
      sealer: opts.sealer,
      log: opts.log,
      run,
      stats,
      onUpstreamError: opts.onUpstreamError,
      onEndpointFailure: (route, f) => {
        // Only the operator's capacity failing for a reason of its own says the endpoint is unwell: a
        // tenant's key that is refused or rate-limited, or a bad request, must not reorder others' requests.
        if (f.shared && f.retryable) endpointFailed(endpointKey(route.provider.slug, route.model));
        if (p.sessionKey) sessions.release(p.sessionKey, endpointKey(route.provider.slug, route.model));
      },
    }).catch((err: unknown) => {
      record(p, {
        status: err instanceof ApiError ? err.status : 500,
        error: err instanceof Error ? err.message : 'error',
        attempts: stats.attempts,
      });
      throw err;
    });
  };

  /** What a workspace can route to: the built-in model, priced models, models other providers
   * serve, the workspace's default and its credentials' allowed models, each with the endpoints a
   * request for it would find, in the order a request without preferences tries them. */
  function routable(space: WorkspaceRouting, principal: Principal): { id: string; endpoints: Endpoint<Route>[] }[] {
    const ws = space.workspace!;
    const named = [...space.credentials.values()].flat().flatMap((c) => (c.disabled ? [] : (c.allowedModels ?? [])));
    const ids = new Set<string>([
      SCRIPTED,
      ...[...prices.keys()].filter((k) => !k.includes('@')),
      ...servedModels(),
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
    const out: { id: string; endpoints: Endpoint<Route>[] }[] = [];
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

  async function models(principal: Principal): Promise<ModelEntry[]> {
    const space = await config.workspace({ orgId: principal.orgId, workspaceId: principal.workspaceId });
    if (!space.workspace) throw keyWorkspaceDeleted('workspace');
    return routable(space, principal).map(({ id, endpoints }) =>
      modelEntry(
        id,
        prices.get(id),
        endpoints.map((e) => ({
          provider: e.provider,
          provider_model: e.route.providerModel,
          price: e.price,
          credentials: e.route.candidates.map((c) => (c.kind === 'byok' ? 'byok' : 'shared')),
          stats: e.stats,
        })),
      ),
    );
  }

  /** The model the router chooses for an auto request (router.ts), with its fallbacks unless the body names its own. */
  async function routeAuto(o: {
    body: RequestBody;
    space: WorkspaceRouting;
    principal: Principal;
    sessionKey: string | null;
  }): Promise<{ body: RequestBody; note: string }> {
    const i = (o.body.plugins ?? []).findIndex((p) => p.id === ROUTER_PLUGIN);
    const plugin = (i >= 0 ? o.body.plugins![i] : {}) as Partial<RouterPlugin>;
    if (plugin.enabled === false)
      throw invalidRequest(
        `plugins.${i}.enabled: ${AUTO_MODEL} is chosen by the auto-router plugin, which this request turns off`,
      );
    if (plugin.pin_model && !o.sessionKey)
      throw invalidRequest(
        `plugins.${i}.pin_model: pinning keeps a session's model, so it needs session_id or x-session-id`,
      );
    const pinKey = plugin.pin_model ? o.sessionKey : null;
    const pinned = pinKey ? await modelPins.get(pinKey) : null;
    const candidates = routable(o.space, o.principal).map(({ id, endpoints }) => {
      const p = prices.get(id);
      return { id, price: p ? p.prompt + p.completion : null, healthy: endpoints.some((e) => e.stats.healthy) };
    });
    const tier = plugin.cost_tier ?? 'medium';
    const pick = chooseModel(candidates, {
      allowed: plugin.allowed_models ?? null,
      excluded: plugin.excluded_models ?? [],
      tier,
      pinned,
    });
    if (!pick)
      throw invalidRequest(
        `${i >= 0 ? `plugins.${i}.allowed_models` : 'model'}: no model this workspace can route to is left for ${AUTO_MODEL}`,
      );
    if (pinKey) modelPins.set(pinKey, pick.model);
    const ownFallbacks = o.body.models !== undefined || o.body.fallbacks !== undefined;
    return {
      body: {
        ...o.body,
        model: pick.model,
        ...(ownFallbacks || !pick.fallbacks.length ? {} : { models: pick.fallbacks }),
      },
      note: `auto=${pick.model}; tier=${tier}${pick.pinned ? '; pinned' : ''}`,
    };
  }

  const service = {
    prepare,
    models,
    /** Resolves once a provider accepted the request; the chunks then always end (finish or thrown error). */
    async stream(p: Prepared, cancel: Cancel): Promise<{ served: Served; chunks: AsyncGenerator<ChatChunk[]> }> {
      if (p.loop) return streamLoop(p, cancel, loopDeps);
      const wireOnly = p.style === 'chat' && p.loggedBody === undefined && p.step === undefined;
      const { value, served, apiKey } = await attempt(p, cancel, (adapter, call) => adapter.stream(call, { wireOnly }));
      stick(p.sessionKey, served);
      const key = endpointKey(served.provider, served.model);
      // Only calls on the operator's capacity are measured: a tenant's own key must not move what others are routed by.
      const measured = served.isByok
        ? undefined
        : (m: { ok: true; ttftMs: number; tps: number | null } | { ok: false }) =>
            m.ok ? stats_.success(key, m) : endpointFailed(key);
      return {
        served,
        chunks: recordedStream({ p, served, apiKey, source: value, usageOf, record, cancel, measured }),
      };
    },
    async complete(p: Prepared, cancel: Cancel): Promise<{ served: Served; completion: Completion }> {
      if (p.loop) return completeWithLoop(p, cancel, loopDeps);
      const { value, served } = await attempt(p, cancel, (adapter, call) => adapter.complete(call));
      stick(p.sessionKey, served);
      if (!served.isByok) {
        const ms = performance.now() - served.startedAt;
        const tokens = value.usage?.completion_tokens ?? 0;
        stats_.success(endpointKey(served.provider, served.model), {
          ttftMs: ms,
          tps: tokens && ms > 0 ? tokens / (ms / 1000) : null,
        });
      }
      // `system_fingerprint` is required (null allowed) by OpenRouter's ChatResult, which its SDK validates.
      const completion: Completion = {
        ...value,
        id: p.id,
        model: served.model,
        system_fingerprint: value.system_fingerprint ?? null,
        usage: usageOf(value.usage, served),
      };
      const choice = completion.choices[0];
      record(p, {
        status: 200,
        served,
        usage: completion.usage,
        finish: choice?.finish_reason ?? null,
        response: completion,
      });
      return { served, completion };
    },
    /** Records a request refused before any route was tried (validation, preset, credentials). */
    refused: (o: {
      principal: Principal;
      style: ApiStyle;
      stream: boolean;
      requestedModel: string | null;
      error: ApiError;
      started: number;
    }) =>
      requestLog.add(
        rowOf(
          { ...o, id: `gen-${uuidv7()}`, loggedBody: undefined },
          { status: o.error.status, error: o.error.message },
        ),
      ),
    /** Drops the routing cache here at once and, with a bus, in every gateway. */
    async invalidate() {
      config.invalidate();
      await opts.bus
        ?.publish('routing', null)
        .catch((err: Error) =>
          opts.log.warn({ err }, 'could not announce a routing change; other gateways see it within their cache TTL'),
        );
    },
    flush: () => requestLog.flush(),
    /** Why the store cannot take the request log now (for readiness), or null. */
    requestLogFault: () => requestLog.writeFault(),
    requestLogPending: () => requestLog.pending(),
    async close() {
      shared?.close();
      await requestLog.close();
      await registry.close();
    },
  };
  const loopDeps: LoopDeps = {
    stream: (p, cancel) => service.stream(p, cancel),
    complete: (p, cancel) => service.complete(p, cancel),
    attempt: async (p, cancel, run) => {
      const { value, served } = await attempt(p, cancel, (_adapter, call) => run(call));
      return { value, served };
    },
    record,
    usageOf,
    models: (p) => models(p.principal),
    image: (o) => generateImage({ ...o, timeoutMs: opts.upstreamTimeoutMs }),
    slots: opts.slots,
    sandboxHost: opts.sandboxHost ?? null,
    log: opts.log,
    toolRan: (p, o) => {
      if (p.broadcast) spans.tool(p, o);
    },
  };
  return service;
}
