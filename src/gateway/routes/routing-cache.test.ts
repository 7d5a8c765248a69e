// Management writes reach model requests of this process at once, however long the routing cache.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../testing/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../inference/fake-upstream.ts';
import { SHARED_OPENAI_KEY, space, upstreamEnv, user } from '../../services/inference-fixtures.ts';

describe('routing cache and management writes', () => {
  let up: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({ env: { ...upstreamEnv(up), COHORT_ROUTING_CACHE_MS: '600000' } });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  const lastKey = () => up.received.at(-1)?.key;

  test('a credential created, disabled or deleted takes effect on the next request', async () => {
    const s = await space(gw, 'cache-byok');
    const ask = async () => assert.equal((await s.chat({ model: 'openai/gpt-4o', messages: [user('hi')] })).status, 200);
    await ask();
    assert.equal(lastKey(), SHARED_OPENAI_KEY);
    const cred = await s.credential({ key: 'sk-own-0123456789' });
    await ask();
    assert.equal(lastKey(), 'sk-own-0123456789');
    assert.equal((await gw.call('PATCH', `/byok/${cred.id}`, { body: { disabled: true } })).status, 200);
    await ask();
    assert.equal(lastKey(), SHARED_OPENAI_KEY);
    assert.equal((await gw.call('PATCH', `/byok/${cred.id}`, { body: { disabled: false } })).status, 200);
    await ask();
    assert.equal(lastKey(), 'sk-own-0123456789');
    assert.equal((await gw.call('DELETE', `/byok/${cred.id}`)).status, 200);
    await ask();
    assert.equal(lastKey(), SHARED_OPENAI_KEY);
  });

  test('a workspace default model and a new preset version apply on the next request', async () => {
    const s = await space(gw, 'cache-default');
    const byDefault = async () => {
      assert.equal((await s.chat({ messages: [user('hi')] })).status, 200);
      return up.received.at(-1)?.model;
    };
    await s.patch({ default_text_model: 'openai/first' });
    assert.equal(await byDefault(), 'first');
    await s.patch({ default_text_model: 'openai/second' });
    assert.equal(await byDefault(), 'second');

    const version = async (model: string) => assert.equal((await gw.call('POST', '/presets/cached/chat/completions', { body: { model } })).status, 200);
    const byPreset = async () => {
      const r = await gw.call('POST', '/chat/completions', { key: gw.keys.api_key, body: { model: '@preset/cached', messages: [user('hi')] } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return up.received.at(-1)?.model;
    };
    await version('openai/p1');
    assert.equal(await byPreset(), 'p1');
    await version('openai/p2');
    assert.equal(await byPreset(), 'p2');
  });
});
