import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectCredentials, type CredentialRule, type SelectInput } from './select.ts';

const cred = (id: string, o: Partial<CredentialRule> = {}): CredentialRule => ({
  id,
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
});

const base: SelectInput = {
  provider: { slug: 'openai', shared: true, zdr: false },
  model: 'openai/gpt-4o',
  userId: 'u1',
  keyHash: 'h1',
  requireZdr: false,
  credentials: [],
};

/** The order of candidates as ids ('shared' for the operator's key), or `!why` when none. */
function route(o: Partial<SelectInput>): string {
  const s = selectCredentials({ ...base, ...o, provider: { ...base.provider, ...o.provider } });
  return s.ok ? s.candidates.map((c) => (c.kind === 'shared' ? 'shared' : c.credentialId)).join(' ') : `!${s.why}`;
}

const rows: [string, Partial<SelectInput>, string][] = [
  ['no credentials: shared capacity', {}, 'shared'],
  ['no credentials, no shared key', { provider: { slug: 'openai', shared: false, zdr: false } }, '!no_credential'],
  ['byok before shared, in creation order on equal sort_order', { credentials: [cred('a'), cred('b')] }, 'a b shared'],
  [
    'sort_order orders',
    { credentials: [cred('a', { sortOrder: 2 }), cred('b', { sortOrder: 1 }), cred('c', { sortOrder: 3 })] },
    'b a c shared',
  ],
  ['disabled skipped', { credentials: [cred('a', { disabled: true }), cred('b')] }, 'b shared'],
  [
    'fallback after non-fallback and shared',
    { credentials: [cred('f', { isFallback: true }), cred('a', { sortOrder: 5 })] },
    'a shared f',
  ],
  [
    'fallbacks ordered by sort_order',
    { credentials: [cred('f2', { isFallback: true, sortOrder: 2 }), cred('f1', { isFallback: true, sortOrder: 1 })] },
    'shared f1 f2',
  ],
  [
    'allowed_models excludes',
    { credentials: [cred('a', { allowedModels: ['openai/gpt-4o-mini'] }), cred('b')] },
    'b shared',
  ],
  ['allowed_models includes full slug', { credentials: [cred('a', { allowedModels: ['openai/gpt-4o'] })] }, 'a shared'],
  ['allowed_models includes bare id', { credentials: [cred('a', { allowedModels: ['gpt-4o'] })] }, 'a shared'],
  ['allowed_user_ids excludes', { credentials: [cred('a', { allowedUserIds: ['u2'] })] }, 'shared'],
  ['allowed_user_ids includes', { credentials: [cred('a', { allowedUserIds: ['u2', 'u1'] })] }, 'a shared'],
  ['allowed_api_key_hashes excludes', { credentials: [cred('a', { allowedApiKeyHashes: ['h2'] })] }, 'shared'],
  ['allowed_api_key_hashes includes', { credentials: [cred('a', { allowedApiKeyHashes: ['h1'] })] }, 'a shared'],
  ['is_byok_only removes shared', { credentials: [cred('a', { isByokOnly: true })] }, 'a'],
  [
    'is_byok_only removes shared even outside its allowed_models',
    { credentials: [cred('a', { isByokOnly: true, allowedModels: ['openai/o3'] })] },
    '!byok_only',
  ],
  [
    'is_byok_only on a disabled credential has no effect',
    { credentials: [cred('a', { isByokOnly: true, disabled: true })] },
    'shared',
  ],
  [
    'is_byok_only keeps fallback credentials',
    { credentials: [cred('a', { isByokOnly: true }), cred('f', { isFallback: true })] },
    'a f',
  ],
  [
    'is_required removes shared for its models',
    { credentials: [cred('a', { isRequired: true, allowedModels: ['openai/gpt-4o'] })] },
    'a',
  ],
  [
    'is_required leaves other models on shared',
    { credentials: [cred('a', { isRequired: true, allowedModels: ['openai/o3'] })] },
    'shared',
  ],
  ['is_required for all models', { credentials: [cred('a', { isRequired: true })] }, 'a'],
  [
    'is_required but restricted to another user',
    { credentials: [cred('a', { isRequired: true, allowedUserIds: ['u2'] })] },
    '!required',
  ],
  [
    'everything restricted, no shared key',
    { provider: { slug: 'openai', shared: false, zdr: false }, credentials: [cred('a', { allowedUserIds: ['u9'] })] },
    '!restricted',
  ],
  [
    'ZDR: declared true only',
    { requireZdr: true, credentials: [cred('t', { declaredZdr: true }), cred('f', { declaredZdr: false }), cred('n')] },
    't',
  ],
  [
    'ZDR: null inherits a ZDR provider',
    {
      requireZdr: true,
      provider: { slug: 'ollama', shared: true, zdr: true },
      credentials: [cred('n'), cred('f', { declaredZdr: false })],
    },
    'n shared',
  ],
  ['ZDR: nothing declares it', { requireZdr: true, credentials: [cred('f', { declaredZdr: false })] }, '!zdr'],
  ['ZDR not required: declared false is fine', { credentials: [cred('f', { declaredZdr: false })] }, 'f shared'],
];

for (const [name, input, expected] of rows) {
  test(`select: ${name}`, () => assert.equal(route(input), expected));
}

test('select: refusals name why, and never a key', () => {
  const s = selectCredentials({
    ...base,
    credentials: [cred('a', { isByokOnly: true, allowedModels: ['openai/o3'] })],
  });
  assert.equal(s.ok, false);
  assert.match((s as { message: string }).message, /provider openai is BYOK-only/);
  const n = selectCredentials({ ...base, provider: { slug: 'groq', shared: false, zdr: false } });
  assert.equal(
    (n as { message: string }).message,
    'no credential for provider groq: add a BYOK credential to the workspace, or configure the shared key COHORT_PROVIDER_GROQ_API_KEY',
  );
});
