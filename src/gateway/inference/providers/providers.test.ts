import { test } from 'node:test';
import assert from 'node:assert/strict';
import { envName, providerTable, splitModel } from './catalogue.ts';
import { costOf, loadPriceTable } from '../prices.ts';

test('providers: defaults, overrides from the environment, model slugs', () => {
  const t = providerTable({
    COHORT_PROVIDER_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1/',
    COHORT_PROVIDER_OPENAI_API_KEY: 'sk-op',
    COHORT_PROVIDER_AMAZON_BEDROCK_ZDR: 'true',
  });
  assert.deepEqual(t.get('openai'), {
    slug: 'openai',
    kind: 'openai',
    baseUrl: 'http://127.0.0.1:9/v1',
    sharedKey: 'sk-op',
    keyless: false,
    zdr: false,
    collectsData: false,
    configured: true,
    serves: new Map(),
  });
  assert.deepEqual(t.get('anthropic'), {
    slug: 'anthropic',
    kind: 'anthropic',
    baseUrl: 'https://api.anthropic.com/v1',
    sharedKey: null,
    keyless: false,
    zdr: false,
    collectsData: false,
    configured: false,
    serves: new Map(),
  });
  // Ollama's default address is on this machine: without the operator's configuration it has none, and no keyless shared capacity.
  assert.deepEqual(t.get('ollama'), {
    slug: 'ollama',
    kind: 'openai',
    baseUrl: null,
    sharedKey: null,
    keyless: false,
    zdr: true,
    collectsData: false,
    configured: false,
    serves: new Map(),
  });
  const withOllama = providerTable({ COHORT_PROVIDER_OLLAMA_API_KEY: 'unused' }).get('ollama');
  assert.deepEqual(withOllama, {
    slug: 'ollama',
    kind: 'openai',
    baseUrl: 'http://127.0.0.1:11434/v1',
    sharedKey: 'unused',
    keyless: true,
    zdr: true,
    collectsData: false,
    configured: true,
    serves: new Map(),
  });
  assert.equal(t.get('local')!.configured, true);
  assert.equal(t.get('amazon-bedrock')!.zdr, true);
  // The operator marks a shared endpoint that logs or trains on prompts; anything but allow or deny is refused at start.
  assert.equal(providerTable({ COHORT_PROVIDER_OPENAI_DATA_COLLECTION: 'allow' }).get('openai')!.collectsData, true);
  assert.equal(providerTable({ COHORT_PROVIDER_OPENAI_DATA_COLLECTION: 'deny' }).get('openai')!.collectsData, false);
  assert.throws(
    () => providerTable({ COHORT_PROVIDER_OPENAI_DATA_COLLECTION: 'yes' }),
    /^Error: COHORT_PROVIDER_OPENAI_DATA_COLLECTION: allow or deny, not yes$/,
  );
  assert.equal(t.get('baidu')!.baseUrl, null);
  assert.equal(envName('amazon-bedrock/claude-on-aws'), 'AMAZON_BEDROCK_CLAUDE_ON_AWS');
  const rows: [string, string | null, string | null][] = [
    ['openai/gpt-4o', 'openai', 'gpt-4o'],
    ['together/meta-llama/Llama-3-8b', 'together', 'meta-llama/Llama-3-8b'],
    ['anthropic/2/claude', 'anthropic/2', 'claude'],
    ['local/scripted', 'local', 'scripted'],
    ['nowhere/x', null, null],
    ['gpt-4o', null, null],
  ];
  for (const [slug, provider, model] of rows) {
    const s = splitModel(slug, t);
    assert.deepEqual(s ? [s.provider.slug, s.model] : [null, null], [provider, model], slug);
  }
});

test('prices: cost per million tokens, cached prompt tokens at the cached rate, unknown models free', () => {
  const p = loadPriceTable();
  assert.equal(costOf(p, 'local/scripted', { prompt_tokens: 10, completion_tokens: 5 }), 0.00002);
  assert.equal(
    costOf(p, 'openai/gpt-4o', {
      prompt_tokens: 1000,
      completion_tokens: 100,
      prompt_tokens_details: { cached_tokens: 400 },
    }),
    0.0015 + 0.0005 + 0.001,
  );
  assert.equal(costOf(p, 'nowhere/model', { prompt_tokens: 1000, completion_tokens: 1000 }), 0);
});
