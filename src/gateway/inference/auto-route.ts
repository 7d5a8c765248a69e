// The model an auto request is served with (router.ts chooses among what the workspace can route
// to), and the sessions whose model the router pinned (pin_model), kept like the endpoint pins
// (shared-stats.ts: through Redis where configured).
import type { Principal } from '../access/identity-store.ts';
import { invalidRequest } from '../errors.ts';
import { ROUTER_PLUGIN, type RouterPlugin } from '../http/request-options.schemas.ts';
import type { Endpoints } from './endpoints.ts';
import type { PriceTable } from './prices.ts';
import { AUTO_MODEL, chooseModel } from './router.ts';
import type { WorkspaceRouting } from './routing-config.ts';
import type { RequestBody } from './routing.ts';
import type { SessionPins } from './shared-stats.ts';

export function createAutoRouter(o: { endpoints: Endpoints; prices: PriceTable; pins: SessionPins }) {
  /** The model the router chooses for an auto request (router.ts), with its fallbacks unless the body names its own. */
  return async function routeAuto(r: {
    body: RequestBody;
    space: WorkspaceRouting;
    principal: Principal;
    sessionKey: string | null;
  }): Promise<{ body: RequestBody; note: string }> {
    const i = (r.body.plugins ?? []).findIndex((p) => p.id === ROUTER_PLUGIN);
    const plugin = (i >= 0 ? r.body.plugins![i] : {}) as Partial<RouterPlugin>;
    if (plugin.enabled === false)
      throw invalidRequest(
        `plugins.${i}.enabled: ${AUTO_MODEL} is chosen by the auto-router plugin, which this request turns off`,
      );
    if (plugin.pin_model && !r.sessionKey)
      throw invalidRequest(
        `plugins.${i}.pin_model: pinning keeps a session's model, so it needs session_id or x-session-id`,
      );
    const pinKey = plugin.pin_model ? r.sessionKey : null;
    const pinned = pinKey ? await o.pins.get(pinKey) : null;
    const candidates = o.endpoints.routable(r.space, r.principal).map(({ id, endpoints }) => {
      const p = o.prices.get(id);
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
    if (pinKey) o.pins.set(pinKey, pick.model);
    const ownFallbacks = r.body.models !== undefined || r.body.fallbacks !== undefined;
    return {
      body: {
        ...r.body,
        model: pick.model,
        ...(ownFallbacks || !pick.fallbacks.length ? {} : { models: pick.fallbacks }),
      },
      note: `auto=${pick.model}; tier=${tier}${pick.pinned ? '; pinned' : ''}`,
    };
  };
}
