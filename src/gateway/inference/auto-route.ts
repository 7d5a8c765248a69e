// The model an auto request is served with (router.ts chooses among what the workspace can route
// to), and the sessions whose model the router pinned (pin_model).
import type { Principal } from '../access/identity-store.ts';
import { invalidRequest } from '../errors.ts';
import { ROUTER_PLUGIN, type RouterPlugin } from '../http/request-options.schemas.ts';
import type { Endpoints } from './endpoints.ts';
import type { PriceTable } from './prices.ts';
import { AUTO_MODEL, chooseModel } from './router.ts';
import type { WorkspaceRouting } from './routing-config.ts';
import type { RequestBody } from './routing.ts';

const MAX_SESSIONS = 100_000;

export function createAutoRouter(o: { endpoints: Endpoints; prices: PriceTable }) {
  /** session → the model the router pinned for it (pin_model). */
  const pins = new Map<string, string>();

  /** The model the router chooses for an auto request (router.ts), with its fallbacks unless the body names its own. */
  return function routeAuto(r: {
    body: RequestBody;
    space: WorkspaceRouting;
    principal: Principal;
    sessionKey: string | null;
  }): { body: RequestBody; note: string } {
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
    const candidates = o.endpoints.routable(r.space, r.principal).map(({ id, endpoints }) => {
      const p = o.prices.get(id);
      return { id, price: p ? p.prompt + p.completion : null, healthy: endpoints.some((e) => e.stats.healthy) };
    });
    const tier = plugin.cost_tier ?? 'medium';
    const pick = chooseModel(candidates, {
      allowed: plugin.allowed_models ?? null,
      excluded: plugin.excluded_models ?? [],
      tier,
      pinned: plugin.pin_model && r.sessionKey ? (pins.get(r.sessionKey) ?? null) : null,
    });
    if (!pick)
      throw invalidRequest(
        `${i >= 0 ? `plugins.${i}.allowed_models` : 'model'}: no model this workspace can route to is left for ${AUTO_MODEL}`,
      );
    if (plugin.pin_model && r.sessionKey) {
      pins.delete(r.sessionKey);
      if (pins.size >= MAX_SESSIONS) pins.delete(pins.keys().next().value!);
      pins.set(r.sessionKey, pick.model);
    }
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
