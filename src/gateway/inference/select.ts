// Which credentials may serve one request for one model at one provider, in the order to try
// them, or why none may. Pure: the workspace's credentials and the request's facts in, a list out.
//
// Rules (docs/reference/api.md#credential-order): disabled credentials are ignored entirely; `allowed_models`,
// `allowed_user_ids` and `allowed_api_key_hashes` restrict what and who may use one (null = no
// restriction); a request requiring ZDR uses only credentials whose `declared_zdr` is true, or
// null on a provider whose policy is ZDR. Order: non-fallback credentials by `sort_order`, then the
// operator's shared capacity, then `is_fallback` credentials by `sort_order`. Shared capacity
// exists when the operator configured a key (or the provider needs none); `is_byok_only` on any
// credential of the provider removes it for every model, `is_required` for the models the
// credential applies to.

import { providerVar } from './providers/catalogue.ts';

export type CredentialRule = {
  id: string;
  disabled: boolean;
  isByokOnly: boolean;
  isFallback: boolean;
  isRequired: boolean;
  declaredZdr: boolean | null;
  sortOrder: number;
  allowedApiKeyHashes: string[] | null;
  allowedModels: string[] | null;
  allowedUserIds: string[] | null;
};

export type Candidate = { kind: 'byok'; credentialId: string } | { kind: 'shared' };

export type SelectInput = {
  provider: { slug: string; shared: boolean; zdr: boolean };
  /** The full model slug `provider/model`. */
  model: string;
  userId: string;
  keyHash: string;
  requireZdr: boolean;
  /** The workspace's credentials of this provider, in creation order. */
  credentials: CredentialRule[];
};

export type NoRoute = 'no_credential' | 'restricted' | 'byok_only' | 'required' | 'zdr';

export type Selection = { ok: true; candidates: Candidate[] } | { ok: false; why: NoRoute; message: string };

const allows = (list: string[] | null, value: string) => list === null || list.includes(value);

export function appliesToModel(c: CredentialRule, model: string): boolean {
  if (c.allowedModels === null) return true;
  const bare = model.slice(model.indexOf('/') + 1);
  return c.allowedModels.includes(model) || c.allowedModels.includes(bare);
}

export function selectCredentials(input: SelectInput): Selection {
  const { provider, model, requireZdr } = input;
  // A workspace without credentials for the provider (most requests): the shared capacity or nothing,
  // without the lists below, which run for every model request.
  if (!input.credentials.length && provider.shared && (!requireZdr || provider.zdr))
    return { ok: true, candidates: [{ kind: 'shared' }] };
  const live = input.credentials.filter((c) => !c.disabled);
  const zdrOk = (declared: boolean | null) => !requireZdr || (declared ?? provider.zdr);
  const eligible = live.filter(
    (c) =>
      appliesToModel(c, model) &&
      allows(c.allowedUserIds, input.userId) &&
      allows(c.allowedApiKeyHashes, input.keyHash),
  );
  const usable = eligible.filter((c) => zdrOk(c.declaredZdr));
  const byOrder = (list: CredentialRule[]) =>
    list
      .map((c, i) => ({ c, i }))
      .sort((a, b) => a.c.sortOrder - b.c.sortOrder || a.i - b.i)
      .map(({ c }) => c);
  const byokOnly = live.some((c) => c.isByokOnly);
  const required = live.some((c) => c.isRequired && appliesToModel(c, model));
  const shared = provider.shared && !byokOnly && !required && zdrOk(null);

  const candidates: Candidate[] = [
    ...byOrder(usable.filter((c) => !c.isFallback)).map((c): Candidate => ({ kind: 'byok', credentialId: c.id })),
    ...(shared ? [{ kind: 'shared' } as const] : []),
    ...byOrder(usable.filter((c) => c.isFallback)).map((c): Candidate => ({ kind: 'byok', credentialId: c.id })),
  ];
  if (candidates.length) return { ok: true, candidates };
  const sharedButZdr = provider.shared && !byokOnly && !required;
  return {
    ok: false,
    ...whyNone({ input, live, byokOnly, required, zdrBlocked: requireZdr && (eligible.length > 0 || sharedButZdr) }),
  };
}

function whyNone(o: {
  input: SelectInput;
  live: CredentialRule[];
  byokOnly: boolean;
  required: boolean;
  zdrBlocked: boolean;
}): { why: NoRoute; message: string } {
  const p = o.input.provider.slug;
  const model = o.input.model;
  if (o.zdrBlocked)
    return {
      why: 'zdr',
      message: `the request requires zero data retention and no credential of provider ${p} that may serve it declares it`,
    };
  if (o.byokOnly)
    return {
      why: 'byok_only',
      message: `provider ${p} is BYOK-only in this workspace and none of its credentials may serve this request (${model})`,
    };
  if (o.required)
    return {
      why: 'required',
      message: `a credential of provider ${p} is required for ${model} and none may serve this request`,
    };
  if (o.live.length)
    return {
      why: 'restricted',
      message: `every credential of provider ${p} in this workspace is restricted from this request (models, users or API keys) and no shared key is configured`,
    };
  return {
    why: 'no_credential',
    message: `no credential for provider ${p}: add a BYOK credential to the workspace, or configure the shared key ${providerVar(p, 'API_KEY')}`,
  };
}
