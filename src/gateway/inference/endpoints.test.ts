// A model's endpoints are planned once per workspace snapshot and their routes once per key: what
// one key may use never reaches another key's request, and a key's new guardrail, the request's
// ZDR requirement and a new snapshot of the workspace's credentials are each seen at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GuardrailPolicy, Principal } from '../access/identity-store.ts';
import { ApiError } from '../errors.ts';
import { createEndpointStats } from './endpoint-stats.ts';
import { createEndpoints, type RouteCtx } from './endpoints.ts';
import { createRegistry, loadPriceTable, providerTable } from './providers/index.ts';
import type { CredentialRow } from './routing-config.ts';

const MODEL = 'openai/gpt-4o-mini';
const registry = createRegistry({ timeoutMs: 1_000 });
const endpoints = createEndpoints({
  providers: providerTable({
    COHORT_PROVIDER_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    COHORT_PROVIDER_OPENAI_API_KEY: 'sk-shared',
    COHORT_PROVIDER_GROQ_BASE_URL: 'http://127.0.0.1:9/v1',
    COHORT_PROVIDER_GROQ_API_KEY: 'sk-shared',
    COHORT_PROVIDER_GROQ_MODELS: MODEL,
  }),
  registry,
  prices: loadPriceTable(),
  stats: createEndpointStats(),
});

const principal = (keyHash: string, guardrail: GuardrailPolicy | null = null) =>
  ({ keyHash, userId: 'user-1', guardrail }) as Principal;
const credential = (o: Partial<CredentialRow>) =>
  ({
    id: 'cred-a',
    provider: 'openai',
    disabled: false,
    isByokOnly: false,
    isFallback: false,
    isRequired: false,
    declaredZdr: null,
    sortOrder: 0,
    allowedApiKeyHashes: null,
    allowedModels: null,
    allowedUserIds: null,
    ...o,
  }) as CredentialRow;
/** Each endpoint as `provider:credential,…`. */
const seen = (ctx: RouteCtx) =>
  endpoints
    .endpointsFor(MODEL, ctx)
    .endpoints.map(
      (e) =>
        `${e.provider}:${e.route.candidates.map((c) => (c.kind === 'byok' ? c.credentialId : 'shared')).join(',')}`,
    );

test("one key's credential does not reach another key's request through the cached routes", () => {
  const credentials = new Map([['openai', [credential({ allowedApiKeyHashes: ['hash-a'] })]]]);
  const ctx = (keyHash: string) => ({
    principal: principal(keyHash),
    credentials,
    requireZdr: false,
    dataCollection: false,
  });
  for (let i = 0; i < 2; i++) {
    assert.deepEqual(seen(ctx('hash-a')), ['openai:cred-a,shared', 'groq:shared']);
    assert.deepEqual(seen(ctx('hash-b')), ['openai:shared', 'groq:shared']);
  }
});

test("a key's new guardrail, the request's ZDR and a new snapshot of the credentials are seen at once", () => {
  const credentials = new Map([['openai', [credential({ declaredZdr: true })]]]);
  const ctx = (o: Partial<RouteCtx> = {}): RouteCtx => ({
    principal: principal('hash-a'),
    credentials,
    requireZdr: false,
    dataCollection: false,
    ...o,
  });
  assert.deepEqual(seen(ctx()), ['openai:cred-a,shared', 'groq:shared']);
  // the shared keys declare no ZDR; the credential does
  assert.deepEqual(seen(ctx({ requireZdr: true })), ['openai:cred-a']);
  const noGroq: GuardrailPolicy = {
    id: 'g1',
    allowedModels: null,
    ignoredModels: null,
    allowedProviders: null,
    ignoredProviders: ['groq'],
    enforceZdr: false,
  };
  assert.deepEqual(seen(ctx({ principal: principal('hash-a', noGroq) })), ['openai:cred-a,shared']);
  const noOpenai = { ...noGroq, ignoredProviders: ['openai'] };
  const refused = endpoints.endpointsFor(MODEL, ctx({ principal: principal('hash-a', noOpenai) }));
  assert.deepEqual(
    refused.endpoints.map((e) => e.provider),
    ['groq'],
  );
  assert.ok(refused.refusal instanceof ApiError);
  assert.match(refused.refusal.message, /provider openai is ignored by the key's guardrail/);
  // the workspace's credential disabled: a new snapshot (routing-config.ts) plans anew
  const next = new Map([['openai', [credential({ disabled: true })]]]);
  assert.deepEqual(seen(ctx({ credentials: next })), ['openai:shared', 'groq:shared']);
  assert.deepEqual(seen(ctx()), ['openai:cred-a,shared', 'groq:shared']);
});

test.after(() => registry.close());
