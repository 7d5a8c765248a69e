// Management writes reach model requests of this process at once, however long the routing cache.
import { describe, test, before, after } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { SHARED_OPENAI_KEY, space, upstreamEnv, user } from '../../../test/helpers/inference-fixtures.ts';

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
    const ask = async () =>
      assert.equal((await s.chat({ model: 'openai/gpt-4o', messages: [user('hi')] })).status, 200);
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

    const version = async (model: string) =>
      assert.equal((await gw.call('POST', '/presets/cached/chat/completions', { body: { model } })).status, 200);
    const byPreset = async () => {
      const r = await gw.call('POST', '/chat/completions', {
        key: gw.keys.api_key,
        body: { model: '@preset/cached', messages: [user('hi')] },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return up.received.at(-1)?.model;
    };
    await version('openai/p1');
    assert.equal(await byPreset(), 'p1');
    await version('openai/p2');
    assert.equal(await byPreset(), 'p2');
  });
});

// Two gateways on one PostgreSQL, each holding its routing configuration for ten minutes: with
// REDIS_URL a management write through one reaches the other within the pub/sub delivery time
// (the announcement is published before the write's response leaves, but it reaches the other
// process on its own connection, so it is awaited here for at most a second, not ten minutes).
const busSkip = !process.env.DATABASE_URL
  ? 'DATABASE_URL is not set'
  : !process.env.REDIS_URL
    ? 'REDIS_URL is not set'
    : false;
describe('routing cache across gateways', { skip: busSkip }, () => {
  let up: FakeUpstream;
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    up = await startFakeUpstream();
    // One install: both gateways unseal credentials with the same master key.
    const env = {
      ...upstreamEnv(up),
      COHORT_ROUTING_CACHE_MS: '600000',
      REDIS_URL: process.env.REDIS_URL!,
      COHORT_MASTER_KEY: randomBytes(32).toString('hex'),
    };
    a = await startTestGateway({ postgres: true, env });
    b = await startTestGateway({ pgSchema: a.pgSchema, keys: a.keys, env });
  });
  after(async () => {
    await b.close();
    await a.close();
    await up.close();
  });

  test('a default model and a credential changed through one gateway apply at once in the other', async () => {
    const s = await space(a, 'bus-default');
    const viaB = async () => {
      const r = await b.call('POST', '/chat/completions', { key: s.key, body: { messages: [user('hi')] } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return { model: up.received.at(-1)?.model, key: up.received.at(-1)?.key };
    };
    const soonViaB = async (expected: { model: string; key: string }) => {
      const deadline = Date.now() + 1000;
      let seen = await viaB();
      while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        seen = await viaB();
      }
      assert.deepEqual(seen, expected);
    };
    await s.patch({ default_text_model: 'openai/first' });
    await soonViaB({ model: 'first', key: SHARED_OPENAI_KEY });
    await s.patch({ default_text_model: 'openai/second' });
    await soonViaB({ model: 'second', key: SHARED_OPENAI_KEY });
    const cred = await s.credential({ key: 'sk-own-bus-0123456789' });
    await soonViaB({ model: 'second', key: 'sk-own-bus-0123456789' });
    assert.equal((await a.call('PATCH', `/byok/${cred.id}`, { body: { disabled: true } })).status, 200);
    await soonViaB({ model: 'second', key: SHARED_OPENAI_KEY });
  });

  test("an endpoint's shared capacity failing in one gateway makes it unhealthy in the other", async () => {
    const s = await space(a, 'bus-health');
    const health = async (gw: TestGateway) => {
      const r = await gw.call('GET', '/models', { key: s.key });
      return r.body.data.find((m: { id: string }) => m.id === 'openai/gpt-4.1-mini').endpoints[0].healthy;
    };
    assert.deepEqual([await health(a), await health(b)], [true, true]);
    up.failKey(SHARED_OPENAI_KEY, 503);
    const failed = await a.call('POST', '/chat/completions', {
      key: s.key,
      body: { model: 'openai/gpt-4.1-mini', messages: [user('hi')] },
    });
    up.failKey(SHARED_OPENAI_KEY, 0);
    assert.equal(failed.status, 502);
    assert.equal(await health(a), false);
    const deadline = Date.now() + 1000;
    while ((await health(b)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await health(b), false);
  });
});
