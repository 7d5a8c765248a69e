// prepare(): a model request validated and resolved (preset, model, fallbacks, server-tool
// restrictions, credentials, the order of its endpoints) before any byte is written; what
// service.ts's stream() and complete() then try.
import { uuidv7 } from '../crypto/uuid7.ts';
import type { Principal } from '../access/identity-store.ts';
import type { Ledger } from '../access/budgets.ts';
import { ApiError, invalidRequest, noUsableCredential, keyWorkspaceDeleted, serverToolDisabled } from '../errors.ts';
import { ROUTER_PLUGIN } from '../http/request-options.schemas.ts';
import { observationOf, type Observation } from '../observability/observation.ts';
import type { Route } from './attempts.ts';
import type { createAutoRouter } from './auto-route.ts';
import type { Endpoints } from './endpoints.ts';
import { arrange, preferencesOf } from './preferences.ts';
import { shouldStoreBodies } from './request-log.ts';
import { AUTO_MODEL } from './router.ts';
import type { RoutingConfig } from './routing-config.ts';
import {
  applyPreset,
  disabledToolIn,
  PRESET_PREFIX,
  presetSlugOf,
  resolveRequest,
  type RequestBody,
} from './routing.ts';
import type { SessionPins } from './shared-stats.ts';
import { type LoopPlan, planLoop } from './tools/loop.ts';
import type { ToolsEnv } from './tools/types.ts';
import type { ChatRequest } from './types.ts';

export type ApiStyle = 'chat' | 'messages' | 'responses';

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

export type PrepareInput = {
  principal: Principal;
  body: RequestBody;
  style: ApiStyle;
  raw: unknown;
  /** The x-session-id header; the body's session_id wins over it. */
  sessionHeader?: string;
};

export function createPrepare(deps: {
  config: RoutingConfig;
  endpoints: Endpoints;
  routeAuto: ReturnType<typeof createAutoRouter>;
  sessions: SessionPins;
  toolsEnv: ToolsEnv;
  ledger?: Ledger;
}) {
  const { config, endpoints, routeAuto, sessions } = deps;
  return async function prepare(o: PrepareInput): Promise<Prepared> {
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
    const ctx = {
      principal,
      credentials: space.credentials,
      requireZdr,
      dataCollection: ws.isDataDiscountLoggingEnabled,
    };
    const loop = resolved.serverTools.length
      ? planLoop({
          body,
          rawTools: body.tools,
          env: deps.toolsEnv,
          workspace: { defaultImageModel: ws.defaultImageModel ?? null, disabled: ws.disabledServerTools ?? [] },
          routesFor: (model) => {
            const r = endpoints.routeFor(model, ctx);
            if (r instanceof ApiError) throw r;
            return [r];
          },
        })
      : undefined;
    const found = resolved.models.map((m) => endpoints.endpointsFor(m, ctx));
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
    if (principal.budgets.length && deps.ledger) await deps.ledger.admit({ requestId: id, scopes: principal.budgets });
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
  };
}
