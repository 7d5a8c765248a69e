// Two gateways on one PostgreSQL and one Redis of the test's own: what one measures of an endpoint
// (time to first token, throughput, success) and the endpoint a session is pinned to are seen by
// the other (src/gateway/inference/shared-stats.ts). openai answers 80 ms late, groq at once; both
// serve the model. A tenant's own failing key does not mark the shared endpoint bad for the others,
// and a session id names a pin only in its own workspace; so do the auto-router's model pins
// (pin_model), which without Redis each gateway keeps for itself.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { postgresUrl, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { redisServerMissing, startOwnRedis, type OwnRedis } from './helpers/redis-server.ts';
import { SHARED_OPENAI_KEY, space, user, type Space } from './helpers/inference-fixtures.ts';
import { waitForValue } from './helpers/wait.ts';

const MODEL = 'openai/gpt-4o-mini';
/** Another model of openai's, whose first measurement marks that a later sync has reached the other gateway. */
const MARKER = 'openai/gpt-4o';
const GROQ_KEY = 'sk-groq-shared-00000000000';
const AUTO = 'cohort/auto';
/** The cheapest and dearest priced models these gateways route to (openai's and the built-in one). */
const CHEAPEST = 'openai/gpt-4o-mini';
const DEAREST = 'openai/gpt-4o';

describe('endpoint measurements and session pins shared by two gateways', {
  skip: (!postgresUrl && 'DATABASE_URL is needed') || redisServerMissing || false,
}, () => {
  let redis: OwnRedis;
  let a: TestGateway;
  let b: TestGateway;
  let openai: FakeUpstream;
  let groq: FakeUpstream;
  let s: Space;
  const ask = (gw: TestGateway, extra: Record<string, unknown> = {}, who = s) =>
    gw.call('POST', '/chat/completions', {
      key: who.key,
      body: { model: MODEL, messages: [user('/say hi')], ...extra },
    });
  /** The upstreams each call reached, in order, by name. */
  const reached = async (call: () => Promise<{ status: number; headers: Headers }>) => {
    const before = [openai.received.length, groq.received.length];
    const res = await call();
    const names = [
      ...openai.received.slice(before[0]).map(() => 'openai'),
      ...groq.received.slice(before[1]).map(() => 'groq'),
    ];
    return { status: res.status, route: res.headers.get('x-cohort-route'), names };
  };
  const endpointsOn = async (gw: TestGateway, model: string) => {
    const res = await gw.call('GET', '/models', { key: s.key });
    assert.equal(res.status, 200);
    const entry = res.body.data.find((m: { id: string }) => m.id === model);
    return Object.fromEntries(
      (entry?.endpoints ?? []).map((e: any) => [
        e.provider,
        { latency: e.latency_ms, ok: e.success_rate, healthy: e.healthy },
      ]),
    ) as Record<string, { latency: number | null; ok: number | null; healthy: boolean }>;
  };

  before(async () => {
    redis = await startOwnRedis();
    [openai, groq] = await Promise.all([startFakeUpstream({ delayMs: 80 }), startFakeUpstream()]);
    const env = {
      REDIS_URL: redis.url,
      COHORT_ROUTING_CACHE_MS: '1',
      COHORT_PROVIDER_OPENAI_BASE_URL: openai.url,
      COHORT_PROVIDER_OPENAI_API_KEY: SHARED_OPENAI_KEY,
      COHORT_PROVIDER_GROQ_BASE_URL: groq.url,
      COHORT_PROVIDER_GROQ_API_KEY: GROQ_KEY,
      COHORT_PROVIDER_GROQ_MODELS: MODEL,
    };
    a = await startTestGateway({ postgres: true, env });
    b = await startTestGateway({ pgSchema: a.pgSchema, keys: a.keys, env });
    s = await space(a, 'shared-routing');
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await Promise.all([openai?.close(), groq?.close(), redis?.stop()]);
  });

  test('a latency sort on B follows what A measured', async () => {
    // Nothing measured of groq anywhere: B's sort keeps the model's own provider first (and measures it).
    const cold = await reached(() => ask(b, { stream: true, provider: { sort: 'latency' } }));
    assert.deepEqual([cold.status, cold.names], [200, ['openai']]);
    for (let i = 0; i < 2; i++)
      assert.equal((await ask(a, { stream: true, provider: { only: ['groq'] } })).status, 200);
    const seen = await waitForValue(
      'B sees the latency A measured of groq',
      () => endpointsOn(b, MODEL),
      (e) => e.groq?.latency !== null,
    );
    assert.notEqual(seen.groq!.latency, null, 'B never saw the latency A measured of groq');
    assert.ok(seen.groq!.latency! < seen.openai!.latency!, JSON.stringify(seen));
    const warm = await reached(() => ask(b, { provider: { sort: 'latency' } }));
    assert.deepEqual([warm.status, warm.names], [200, ['groq']]);
    assert.equal(warm.route, `provider=groq; model=${MODEL}; credential=shared; sort=latency`);
  });

  test("a tenant's failing key on A does not mark the shared endpoint bad on B", async () => {
    const noisy = await space(a, 'shared-noisy');
    await noisy.credential({ provider: 'groq', key: 'sk-groq-noisy-0123456789' });
    groq.failKey('sk-groq-noisy-0123456789', 401);
    for (let i = 0; i < 3; i++) assert.equal((await ask(a, { provider: { only: ['groq'] } }, noisy)).status, 401);
    groq.failKey('sk-groq-noisy-0123456789', 0);
    // A call on A after those: once B has its measurement, it has every sample A queued before it.
    const marker = await a.call('POST', '/chat/completions', {
      key: s.key,
      body: { model: MARKER, messages: [user('/say hi')] },
    });
    assert.equal(marker.status, 200);
    const synced = await waitForValue(
      'B sees the marker call',
      () => endpointsOn(b, MARKER),
      (e) => e.openai?.latency !== null && e.openai?.latency !== undefined,
    );
    assert.notEqual(synced.openai?.latency ?? null, null, 'B never saw the marker call');
    const groqOnB = (await endpointsOn(b, MODEL)).groq!;
    assert.deepEqual([groqOnB.healthy, groqOnB.ok], [true, 1]);
  });

  test("the router's model pin made on A holds on B, in its own workspace only", async () => {
    const other = await space(a, 'shared-auto-other');
    const auto = (gw: TestGateway, tier: string, who = s) =>
      gw.call('POST', '/chat/completions', {
        key: who.key,
        body: {
          model: AUTO,
          session_id: 'auto-1',
          messages: [user('/say hi')],
          plugins: [{ id: 'auto-router', cost_tier: tier, pin_model: true }],
        },
      });
    const seen = (res: { status: number; body: any; headers: Headers }) => [
      res.status,
      res.body.model,
      res.headers.get('x-cohort-route')?.match(/auto=.*?; tier=\w+(; pinned)?/)?.[0],
    ];
    assert.deepEqual(seen(await auto(a, 'low')), [200, CHEAPEST, `auto=${CHEAPEST}; tier=low`]);
    // B has never served this session: the pin it reads is the one A wrote
    for (const gw of [b, a, b])
      assert.deepEqual(seen(await auto(gw, 'max')), [200, CHEAPEST, `auto=${CHEAPEST}; tier=max; pinned`]);
    // the same session id under another workspace's key is another session, with nothing pinned
    assert.deepEqual(seen(await auto(b, 'max', other)), [200, DEAREST, `auto=${DEAREST}; tier=max`]);
    assert.deepEqual(seen(await auto(a, 'low', other)), [200, DEAREST, `auto=${DEAREST}; tier=low; pinned`]);
    // and it did not move the first workspace's pin
    assert.deepEqual(seen(await auto(b, 'max')), [200, CHEAPEST, `auto=${CHEAPEST}; tier=max; pinned`]);
  });

  // Last: groq fails here, and stays unhealthy (on both gateways) for a while.
  test('a session pinned through A stays pinned through B, in its own workspace only, and is released when the endpoint fails', async () => {
    const first = await reached(() => ask(a, { session_id: 'conv-1', provider: { only: ['groq'] } }));
    assert.deepEqual([first.status, first.names], [200, ['groq']]);
    for (let i = 0; i < 10; i++) {
      const r = await reached(() => ask(b, { session_id: 'conv-1' }));
      assert.deepEqual(
        [r.status, r.names, r.route],
        [200, ['groq'], `provider=groq; model=${MODEL}; credential=shared; sort=default; session=sticky`],
      );
    }
    // The same session id in another workspace (another tenant) names no pin: the default endpoint.
    const other = await space(a, 'shared-other');
    const theirs = await reached(() => ask(b, { session_id: 'conv-1' }, other));
    assert.deepEqual([theirs.status, theirs.names], [200, ['openai']]);
    assert.match(theirs.route!, /; session=new$/);
    // and their request did not move the first workspace's pin
    const still = await reached(() => ask(a, { session_id: 'conv-1' }));
    assert.deepEqual([still.status, still.names], [200, ['groq']]);

    groq.failKey(GROQ_KEY, 503);
    const failed = await reached(() => ask(b, { session_id: 'conv-1' }));
    groq.failKey(GROQ_KEY, 0);
    assert.deepEqual([failed.status, failed.names], [200, ['openai', 'groq']]);
    // the pin let go of groq on B's failure, and now names openai, on A as well
    const moved = await reached(() => ask(a, { session_id: 'conv-1' }));
    assert.deepEqual(
      [moved.status, moved.names, moved.route],
      [200, ['openai'], `provider=openai; model=${MODEL}; credential=shared; sort=default; session=sticky`],
    );
  });
});

describe("the router's model pins without Redis: each gateway keeps its own", {
  skip: !postgresUrl && 'DATABASE_URL is needed',
}, () => {
  let a: TestGateway;
  let b: TestGateway;
  let up: FakeUpstream;
  let s: Space;
  before(async () => {
    up = await startFakeUpstream();
    const env = { COHORT_PROVIDER_OPENAI_BASE_URL: up.url, COHORT_PROVIDER_OPENAI_API_KEY: SHARED_OPENAI_KEY };
    a = await startTestGateway({ postgres: true, env });
    b = await startTestGateway({ pgSchema: a.pgSchema, keys: a.keys, env });
    s = await space(a, 'auto-local');
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await up?.close();
  });

  test('a session pinned on A is pinned on A only', async () => {
    const auto = async (gw: TestGateway, tier: string) => {
      const res = await gw.call('POST', '/chat/completions', {
        key: s.key,
        body: {
          model: AUTO,
          session_id: 'auto-1',
          messages: [user('/say hi')],
          plugins: [{ id: 'auto-router', cost_tier: tier, pin_model: true }],
        },
      });
      return [res.status, res.body.model, /; pinned/.test(res.headers.get('x-cohort-route') ?? '')];
    };
    assert.deepEqual(await auto(a, 'low'), [200, CHEAPEST, false]);
    assert.deepEqual(await auto(a, 'max'), [200, CHEAPEST, true]);
    // B has a pin of its own for the session: the first model it chose there
    assert.deepEqual(await auto(b, 'max'), [200, DEAREST, false]);
    assert.deepEqual(await auto(b, 'low'), [200, DEAREST, true]);
    assert.deepEqual(await auto(a, 'max'), [200, CHEAPEST, true]);
  });
});
