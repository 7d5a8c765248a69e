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
import {
  ApiError,
  badModelRequest,
  invalidRequest,
  keyWorkspaceDeleted,
  resourceNotFound,
  serverToolDisabled,
} from '../errors.ts';
import {
  createRegistry,
  providerTable,
  providerVar,
  splitModel,
  loadPriceTable,
  costOf,
  selectCredentials,
} from './providers/index.ts';
import type { Cancel, ChatChunk, ChatRequest, Completion, Usage } from './types.ts';
import { createRoutingConfig, type CredentialRow, type RoutingConfig } from './routing-config.ts';
import { applyPreset, disabledToolIn, presetSlugOf, resolveRequest, type RequestBody } from './routing.ts';
import { tryRoutes, type Route, type Served } from './attempts.ts';
import { createRequestLog, shouldStoreBodies, type RequestLogOptions } from './request-log.ts';
import { recordedStream, type Outcome, rowOf } from './record.ts';
import type { InvalidationBus } from '../access/invalidation.ts';
import { modelEntry, SCRIPTED, type ModelEntry } from './model-list.ts';
import type { ConcurrencyLimiter } from '../access/concurrency.ts';
import type { Ledger } from '../access/budgets.ts';
import { guardrailRefusal } from './guardrail.ts';
import { completeWithLoop, type LoopDeps, type LoopPlan, planLoop, streamLoop } from './tools/loop.ts';
import { generateImage } from './tools/images.ts';
import { noServerTools } from './tools/env.ts';
import type { ToolsEnv } from './tools/types.ts';
import type { SandboxHost } from './tools/sandbox.ts';
import { observationOf, type Observation } from '../observability/observation.ts';
import type { Broadcaster } from '../observability/broadcast.ts';
import { broadcastsOf } from '../observability/emit.ts';

export type ApiStyle = 'chat' | 'messages' | 'responses';

const dataCollectionRefused = (slug: string) =>
  `provider ${slug}'s shared endpoint may log or train on prompts (${providerVar(slug, 'DATA_COLLECTION')}=allow) and this workspace does not allow that: turn on is_data_discount_logging_enabled, or add a BYOK credential for ${slug}`;

const providerNotConfigured = (slug: string) =>
  invalidRequest(
    `model: provider ${slug} is not configured on this gateway: its operator sets ${providerVar(slug, 'BASE_URL')} or ${providerVar(slug, 'API_KEY')}, or the workspace adds a BYOK credential for it`,
  );

export type Prepared = {
  id: string;
  started: number;
  style: ApiStyle;
  stream: boolean;
  principal: Principal;
  requestedModel: string | null;
  routes: Route[];
  upstream: ChatRequest;
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

  const usageOf = (u: Usage | null | undefined, served: Served): Usage => {
    const usage = u ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const details = usage.prompt_tokens_details;
    // Fields by name, then the provider's others: spreading a parsed object costs ~2 µs, per request.
    const out: Usage = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      prompt_tokens_details: details ? { ...details, cached_tokens: details.cached_tokens ?? 0 } : { cached_tokens: 0 },
      cost: costOf(prices, served.model, usage),
      is_byok: served.isByok,
    };
    for (const k in usage) if (!(k in out)) (out as Record<string, unknown>)[k] = (usage as Record<string, unknown>)[k];
    return out;
  };

  function routeFor(
    model: string,
    ctx: {
      principal: Principal;
      credentials: ReadonlyMap<string, CredentialRow[]>;
      requireZdr: boolean;
      /** The workspace's is_data_discount_logging_enabled: shared endpoints that collect data are usable. */
      dataCollection: boolean;
    },
  ): Route | ApiError {
    const split = splitModel(model, providers);
    if (!split?.model) throw invalidRequest(`model: ${model} names no known provider (expected provider/model)`);
    const { provider } = split;
    const refusal = guardrailRefusal(ctx.principal.guardrail, { model, provider: provider.slug });
    if (refusal) return refusal;
    const adapter = registry.adapter(provider.kind);
    if (adapter.hasModel && !adapter.hasModel(split.model)) throw resourceNotFound(`model ${model}`);
    const credentials = ctx.credentials.get(provider.slug) ?? [];
    // Nothing is connected to for a provider the operator did not configure and the workspace has no key for.
    if (!provider.configured && !credentials.some((c) => !c.disabled)) throw providerNotConfigured(provider.slug);
    if (!provider.baseUrl && provider.kind !== 'local')
      throw invalidRequest(
        `model: provider ${provider.slug} has no endpoint configured (${providerVar(provider.slug, 'BASE_URL')})`,
      );
    const shared = provider.keyless || provider.sharedKey !== null;
    const withheld = shared && provider.collectsData && !ctx.dataCollection;
    const sel = selectCredentials({
      provider: { slug: provider.slug, shared: shared && !withheld, zdr: provider.zdr },
      model,
      userId: ctx.principal.userId,
      keyHash: ctx.principal.keyHash,
      requireZdr: ctx.requireZdr,
      credentials,
    });
    if (!sel.ok && withheld && sel.why === 'no_credential')
      return badModelRequest(dataCollectionRefused(provider.slug));
    if (!sel.ok) return badModelRequest(sel.message);
    return { model, provider, providerModel: split.model, adapter, candidates: sel.candidates, credentials };
  }

  async function prepare(o: {
    principal: Principal;
    body: RequestBody;
    style: ApiStyle;
    raw: unknown;
    /** The `x-session-id` header, used when the body names no session. */
    sessionHeader?: string | string[];
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
    const body = slug ? applyPreset(asked, await config.preset({ workspaceId: ws.id, slug })) : asked;
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
    const found = resolved.models.map((m) =>
      routeFor(m, {
        principal,
        credentials: space.credentials,
        requireZdr,
        dataCollection: ws.isDataDiscountLoggingEnabled,
      }),
    );
    const routes = found.filter((r): r is Route => !(r instanceof ApiError));
    if (!routes.length) throw found[0] as ApiError;
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
    }).catch((err: unknown) => {
      record(p, {
        status: err instanceof ApiError ? err.status : 500,
        error: err instanceof Error ? err.message : 'error',
        attempts: stats.attempts,
      });
      throw err;
    });
  };

  /** What the caller's workspace can route to: the built-in model, priced models, the workspace's
   * default and its credentials' allowed models, each kept when a request for it would find a route. */
  async function models(principal: Principal): Promise<ModelEntry[]> {
    const space = await config.workspace({ orgId: principal.orgId, workspaceId: principal.workspaceId });
    if (!space.workspace) throw keyWorkspaceDeleted('workspace');
    const named = [...space.credentials.values()].flat().flatMap((c) => (c.disabled ? [] : (c.allowedModels ?? [])));
    const ids = new Set([
      SCRIPTED,
      ...prices.keys(),
      ...(space.workspace.defaultTextModel ? [space.workspace.defaultTextModel] : []),
      ...named,
    ]);
    const routable = [...ids].filter((id) => {
      try {
        return !(
          routeFor(id, {
            principal,
            credentials: space.credentials,
            requireZdr: principal.guardrail?.enforceZdr === true,
            dataCollection: space.workspace!.isDataDiscountLoggingEnabled,
          }) instanceof ApiError
        );
      } catch {
        return false;
      }
    });
    return routable
      .sort((a, b) => (a === SCRIPTED ? -1 : b === SCRIPTED ? 1 : a.localeCompare(b)))
      .map((id) => modelEntry(id, prices.get(id)));
  }

  const service = {
    prepare,
    models,
    /** Resolves once a provider accepted the request; the chunks then always end (finish or thrown error). */
    async stream(p: Prepared, cancel: Cancel): Promise<{ served: Served; chunks: AsyncGenerator<ChatChunk[]> }> {
      if (p.loop) return streamLoop(p, cancel, loopDeps);
      const wireOnly = p.style === 'chat' && p.loggedBody === undefined && p.step === undefined;
      const { value, served, apiKey } = await attempt(p, cancel, (adapter, call) => adapter.stream(call, { wireOnly }));
      return { served, chunks: recordedStream({ p, served, apiKey, source: value, usageOf, record, cancel }) };
    },
    async complete(p: Prepared, cancel: Cancel): Promise<{ served: Served; completion: Completion }> {
      if (p.loop) return completeWithLoop(p, cancel, loopDeps);
      const { value, served } = await attempt(p, cancel, (adapter, call) => adapter.complete(call));
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
