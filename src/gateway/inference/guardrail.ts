// A guardrail's model and provider rules (docs/guides/keys-and-budgets.md), checked for each route
// a request could take: a model or provider the guardrail ignores, or that its allow-list (when
// it has one) leaves out, is no route. Its spending limit is the ledger's (access/budgets.ts); its
// ZDR enforcement is the request's `zdr` forced on (service.ts). Pure.
import type { GuardrailPolicy } from '../access/identity-store.ts';
import { type ApiError, guardrailRefused } from '../errors.ts';

export function guardrailRefusal(g: GuardrailPolicy | null, route: { model: string; provider: string }) {
  if (!g) return null;
  const why = (what: string): ApiError => guardrailRefused(`${what} (guardrail ${g.id})`);
  if (g.ignoredModels?.includes(route.model)) return why(`model ${route.model} is ignored by the key's guardrail`);
  if (g.allowedModels && !g.allowedModels.includes(route.model))
    return why(`model ${route.model} is not among the models the key's guardrail allows`);
  if (g.ignoredProviders?.includes(route.provider))
    return why(`provider ${route.provider} is ignored by the key's guardrail`);
  if (g.allowedProviders && !g.allowedProviders.includes(route.provider))
    return why(`provider ${route.provider} is not among the providers the key's guardrail allows`);
  return null;
}
