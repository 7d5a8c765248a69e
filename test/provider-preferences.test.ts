// Provider preferences end to end: one model (openai/gpt-4o-mini) served by three recording
// upstreams on loopback (its own provider openai, together at a lower price and a slower answer,
// groq dearer and fastest), each request's choice proven by which upstream received it, with which
// key, and by the log and the x-cohort-route header. A hostile workspace cannot reach another
// account's BYOK endpoint by naming its provider.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { SHARED_OPENAI_KEY, space, user, type Space } from './helpers/inference-fixtures.ts';

const MODEL = 'openai/gpt-4o-mini';
const TOGETHER_KEY = 'sk-together-shared-0000000';
const GROQ_KEY = 'sk-groq-shared-00000000000';

describe('provider preferences across endpoints', () => {
  let gw: TestGateway;
  let openai: FakeUpstream;
  let together: FakeUpstream;
  let groq: FakeUpstream;
  let fireworks: FakeUpstream;
  let s: Space;
  const all = () => [openai, together, groq, fireworks];
  /** The upstream each request reached since `mark`, by name (grouped by upstream, not in time order). */
  const mark = () => all().map((u) => u.received.length);
  const since = (m: number[]) =>
    all().flatMap((u, i) =>
      u.received.slice(m[i]).map((r) => `${['openai', 'together', 'groq', 'fireworks'][i]}:${r.model}:${r.key}`),
    );
  const ask = (extra: Record<string, unknown> = {}, who = s, headers?: Record<string, string>) =>
    gw.call('POST', '/chat/completions', {
      key: who.key,
      body: { model: MODEL, messages: [user('/say hi')], ...extra },
      headers,
    });

  before(async () => {
    [openai, together, groq, fireworks] = await Promise.all([
      startFakeUpstream({ delayMs: 40 }),
      startFakeUpstream({ delayMs: 80 }),
      startFakeUpstream(),
      startFakeUpstream(),
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'prefs-'));
    const prices = join(dir, 'prices.json');
    writeFileSync(
      prices,
      JSON.stringify({
        [`${MODEL}@together`]: { prompt: 0.05, completion: 0.1 },
        [`${MODEL}@groq`]: { prompt: 1, completion: 2 },
      }),
    );
    gw = await startTestGateway({
      env: {
        COHORT_ROUTING_CACHE_MS: '1',
        COHORT_PRICE_TABLE: prices,
        COHORT_PROVIDER_OPENAI_BASE_URL: openai.url,
        COHORT_PROVIDER_OPENAI_API_KEY: SHARED_OPENAI_KEY,
        COHORT_PROVIDER_TOGETHER_BASE_URL: together.url,
        COHORT_PROVIDER_TOGETHER_API_KEY: TOGETHER_KEY,
        COHORT_PROVIDER_TOGETHER_MODELS: `${MODEL}=gpt-4o-mini-turbo`,
        COHORT_PROVIDER_GROQ_BASE_URL: groq.url,
        COHORT_PROVIDER_GROQ_API_KEY: GROQ_KEY,
        COHORT_PROVIDER_GROQ_MODELS: MODEL,
        // No operator key and no model list: reachable only through a workspace's credential.
        COHORT_PROVIDER_FIREWORKS_BASE_URL: fireworks.url,
      },
    });
    s = await space(gw, 'prefs');
  });
  after(async () => {
    await gw.close();
    await Promise.all(all().map((u) => u.close()));
  });

  test('GET /models lists the endpoints of the model with their prices', async () => {
    const res = await gw.call('GET', '/models', { key: s.key });
    assert.equal(res.status, 200);
    const entry = res.body.data.find((m: { id: string }) => m.id === MODEL);
    assert.deepEqual(
      entry.endpoints.map((e: any) => [e.provider, e.provider_model, e.pricing, e.credentials, e.healthy]),
      [
        [
          'openai',
          'gpt-4o-mini',
          { prompt: '0.00000015', completion: '0.0000006', input_cache_read: '0.000000075' },
          ['shared'],
          true,
        ],
        ['together', 'gpt-4o-mini-turbo', { prompt: '0.00000005', completion: '0.0000001' }, ['shared'], true],
        ['groq', 'gpt-4o-mini', { prompt: '0.000001', completion: '0.000002' }, ['shared'], true],
      ],
    );
  });

  test("no preference: the model's own provider; sort price: the cheapest", async () => {
    let m = mark();
    const plain = await ask();
    assert.equal(plain.status, 200);
    assert.deepEqual(since(m), [`openai:gpt-4o-mini:${SHARED_OPENAI_KEY}`]);
    assert.equal(
      plain.headers.get('x-cohort-route'),
      `provider=openai; model=${MODEL}; credential=shared; sort=default`,
    );

    m = mark();
    const cheap = await ask({ provider: { sort: 'price' } });
    assert.equal(cheap.status, 200);
    assert.deepEqual(since(m), [`together:gpt-4o-mini-turbo:${TOGETHER_KEY}`]);
    // 7 prompt and 1 completion tokens at together's price, not openai's
    const u = cheap.body.usage;
    assert.equal(u.cost, Math.round((u.prompt_tokens * 0.05 + u.completion_tokens * 0.1) * 1e6) / 1e12);
  });

  test('only, ignore, order, max_price', async () => {
    const rows: [Record<string, unknown>, string][] = [
      [{ only: ['groq'] }, 'groq'],
      [{ ignore: ['openai', 'groq'] }, 'together'],
      [{ order: ['groq', 'together'] }, 'groq'],
      [{ order: ['together'], sort: 'price' }, 'together'],
      [{ max_price: { prompt: 0.1 } }, 'together'],
      [{ max_price: { prompt: 0.5, completion: 1 } }, 'openai'],
    ];
    for (const [provider, want] of rows) {
      const m = mark();
      const res = await ask({ provider });
      assert.equal(res.status, 200, JSON.stringify(provider));
      assert.deepEqual(
        since(m).map((r) => r.split(':')[0]),
        [want],
        JSON.stringify(provider),
      );
    }
    const none = await ask({ provider: { max_price: { prompt: 0.01 } } });
    assert.equal(none.status, 400);
    assert.match(
      none.body.error.message,
      /^invalid request parameters: provider: no endpoint of openai\/gpt-4o-mini meets/,
    );
  });

  test('sort latency picks the endpoint measured fastest to its first token; the workspace default applies', async () => {
    for (const p of ['openai', 'together', 'groq'])
      for (let i = 0; i < 2; i++) assert.equal((await ask({ stream: true, provider: { only: [p] } })).status, 200);
    let m = mark();
    assert.equal((await ask({ provider: { sort: 'latency' } })).status, 200);
    assert.deepEqual(
      since(m).map((r) => r.split(':')[0]),
      ['groq'],
    );

    const ws = await space(gw, 'prefs-default', { default_provider_sort: 'price' });
    m = mark();
    assert.equal((await ask({}, ws)).status, 200);
    assert.deepEqual(
      since(m).map((r) => r.split(':')[0]),
      ['together'],
    );
  });

  test('session_id keeps the endpoint across ten requests, and lets go when it fails', async () => {
    const first = await ask({ session_id: 'conv-1', provider: { only: ['groq'] } });
    assert.equal(first.status, 200);
    let m = mark();
    for (let i = 0; i < 10; i++) {
      const res = await ask({ session_id: 'conv-1' });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('x-cohort-route')!, /^provider=groq; .*; session=sticky$/);
    }
    assert.deepEqual(
      since(m).map((r) => r.split(':')[0]),
      Array(10).fill('groq'),
    );
    // the header names a session too; the body's session_id wins over it
    m = mark();
    assert.equal((await ask({}, s, { 'x-session-id': 'conv-1' })).status, 200);
    assert.equal((await ask({ session_id: 'conv-2' }, s, { 'x-session-id': 'conv-1' })).status, 200);
    assert.deepEqual(
      since(m).map((r) => r.split(':')[0]),
      ['openai', 'groq'],
    );

    groq.failKey(GROQ_KEY, 503);
    m = mark();
    for (let i = 0; i < 3; i++) assert.equal((await ask({ session_id: 'conv-1' })).status, 200);
    groq.failKey(GROQ_KEY, 0);
    // one failed try at groq, then openai; the session now stays on openai
    assert.deepEqual(
      since(m).map((r) => r.split(':')[0]),
      ['openai', 'openai', 'openai', 'groq'],
    );
    const bad = await ask({}, s, { 'x-session-id': 'x'.repeat(257) });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /x-session-id: /);
  });

  test("BYOK keeps its order within an endpoint; another account's BYOK endpoint is out of reach", async () => {
    const own = await space(gw, 'prefs-byok');
    await own.credential({ provider: 'together', key: 'sk-together-own-0123456789' });
    let m = mark();
    assert.equal((await ask({ provider: { sort: 'price' } }, own)).status, 200);
    assert.deepEqual(since(m), ['together:gpt-4o-mini-turbo:sk-together-own-0123456789']);

    const victim = await space(gw, 'prefs-victim');
    await victim.credential({ provider: 'fireworks', key: 'sk-fw-victim-0123456789', allowed_models: [MODEL] });
    m = mark();
    const theirs = await ask({ provider: { only: ['fireworks'] } }, victim);
    assert.equal(theirs.status, 200);
    assert.deepEqual(since(m), ['fireworks:gpt-4o-mini:sk-fw-victim-0123456789']);

    m = mark();
    const only = await ask({ provider: { only: ['fireworks'] } });
    assert.equal(only.status, 400);
    const ordered = await ask({ provider: { order: ['fireworks'], allow_fallbacks: false } });
    assert.equal(ordered.status, 200);
    const models = await gw.call('GET', '/models', { key: s.key });
    const entry = models.body.data.find((x: { id: string }) => x.id === MODEL);
    assert.deepEqual(since(m), [`openai:gpt-4o-mini:${SHARED_OPENAI_KEY}`]);
    assert.ok(!entry.endpoints.some((e: { provider: string }) => e.provider === 'fireworks'));

    // A tenant whose own key fails cannot mark the endpoint unhealthy for everyone else.
    const noisy = await space(gw, 'prefs-noisy');
    await noisy.credential({ provider: 'together', key: 'sk-together-noisy-0123456789' });
    together.failKey('sk-together-noisy-0123456789', 401);
    for (let i = 0; i < 3; i++) assert.equal((await ask({ provider: { only: ['together'] } }, noisy)).status, 401);
    together.failKey('sk-together-noisy-0123456789', 0);
    const after = await gw.call('GET', '/models', { key: s.key });
    const togetherNow = after.body.data
      .find((x: { id: string }) => x.id === MODEL)
      .endpoints.find((e: { provider: string }) => e.provider === 'together');
    assert.deepEqual([togetherNow.healthy, togetherNow.success_rate], [true, 1]);
  });

  // Last: a failure makes an endpoint unhealthy for a while, which would reorder the tests after it.
  test('sort price falls back in price order; allow_fallbacks false makes one attempt', async () => {
    let m: number[];
    together.failKey(TOGETHER_KEY, 503);
    m = mark();
    const fell = await ask({ provider: { sort: 'price' } });
    assert.equal(fell.status, 200);
    // together (cheapest) was tried and failed, then openai (next by price) served: two attempts
    assert.deepEqual(since(m), [
      `openai:gpt-4o-mini:${SHARED_OPENAI_KEY}`,
      `together:gpt-4o-mini-turbo:${TOGETHER_KEY}`,
    ]);
    const row = (await s.log()).find((r) => r.id === fell.body.id)!;
    assert.deepEqual([row.provider, row.attempts, row.routing], ['openai', 2, 'sort=price']);

    // allow_fallbacks false: one endpoint, no fallback (together, now unhealthy, is named first by order)
    m = mark();
    const single = await ask({ provider: { order: ['together'], allow_fallbacks: false } });
    assert.equal(single.status, 502);
    assert.deepEqual(since(m), [`together:gpt-4o-mini-turbo:${TOGETHER_KEY}`]);
    together.failKey(TOGETHER_KEY, 0);
  });
});
