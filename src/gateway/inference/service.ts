// The inference router as a service: prepare() (prepare.ts) validates and resolves a model request
// before any byte is written; stream() and complete() then try its routes, add cost to usage, and
// record the request in the log. A request that names server tools is handed to the agent loop
// (tools/loop.ts), which makes its turns through the same stream() and complete(), each recorded as
// a step of the generation.
import { uuidv7 } from '../crypto/uuid7.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { Principal } from '../access/identity-store.ts';
import { ApiError, keyWorkspaceDeleted } from '../errors.ts';
import { createRegistry, providerTable, loadPriceTable, costOf } from './providers/index.ts';
import { endpointKey } from './endpoint-stats.ts';
import { createSessionPins } from './shared-stats.ts';
import type { RedisLink } from '../store/redis.ts';
import type { Cancel, ChatChunk, Completion, Usage } from './types.ts';
import { createRoutingConfig, type RoutingConfig } from './routing-config.ts';
import { tryRoutes, type Served } from './attempts.ts';
import { createRequestLog, type RequestLogOptions } from './request-log.ts';
import { recordedStream, type Outcome, rowOf } from './record.ts';
import type { InvalidationBus } from '../access/invalidation.ts';
import { modelEntry, type ModelEntry } from './model-list.ts';
import type { ConcurrencyLimiter } from '../access/concurrency.ts';
import type { Ledger } from '../access/budgets.ts';
import { completeWithLoop, type LoopDeps, streamLoop } from './tools/loop.ts';
import { generateImage } from './tools/images.ts';
import { noServerTools } from './tools/env.ts';
import type { ToolsEnv } from './tools/types.ts';
import type { SandboxHost } from './tools/sandbox.ts';
import type { Broadcaster } from '../observability/broadcast.ts';
import { broadcastsOf } from '../observability/emit.ts';
import { createEndpointHealth } from './endpoint-health.ts';
import { createEndpoints } from './endpoints.ts';
import { createAutoRouter } from './auto-route.ts';
import { type ApiStyle, createPrepare, type Prepared } from './prepare.ts';

const pinOf = (served: { provider: string; model: string }) => endpointKey(served.provider, served.model);

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
  const health = createEndpointHealth({ bus: opts.bus, redis: opts.redis, log: opts.log });
  const stats_ = health.stats;
  const endpointFailed = health.failed;
  /** session → the endpoint that last served it (endpointKey). */
  const sessions = createSessionPins({ redis: opts.redis, log: opts.log });
  const stick = (key: string | null, served: Served) => {
    if (key) sessions.set(key, pinOf(served));
  };
  const endpoints = createEndpoints({ registry, providers, prices, stats: stats_ });
  const prepare = createPrepare({
    config,
    endpoints,
    routeAuto: createAutoRouter({
      endpoints,
      prices,
      /** session → the model the router pinned for it (pin_model), shared like the endpoint pins. */
      pins: createSessionPins({ redis: opts.redis, log: opts.log, kind: 'model' }),
    }),
    sessions,
    toolsEnv,
    ledger: opts.ledger,
  });

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

  async function models(principal: Principal): Promise<ModelEntry[]> {
    const space = await config.workspace({ orgId: principal.orgId, workspaceId: principal.workspaceId });
    if (!space.workspace) throw keyWorkspaceDeleted('workspace');
    return endpoints.routable(space, principal).map(({ id, endpoints }) =>
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
      health.close();
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
