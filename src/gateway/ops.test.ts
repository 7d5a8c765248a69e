// What an operator and a new user reach without reading the docs: the index at /, liveness at
// /health, readiness at /ready (store, and Redis where configured), Prometheus metrics at /metrics
// (behind COHORT_METRICS_TOKEN when set), and GET /api/v1/models in OpenRouter's list shape, read
// by the official SDK's models.list().
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import { startTestGateway, type TestGateway } from '../../test/helpers/gateway.ts';

const redisUrl = process.env.REDIS_URL;

describe('operator routes', () => {
  let gw: TestGateway;
  let root: string;
  before(async () => {
    gw = await startTestGateway({ env: { COHORT_METRICS_TOKEN: 'metrics-secret-1' } });
    root = gw.url.replace(/\/api\/v1$/, '');
  });
  after(() => gw.close());

  test('/, /health and /ready answer without a key', async () => {
    const index = await fetch(`${root}/`);
    assert.deepEqual(
      [index.status, await index.json()],
      [
        200,
        {
          name: 'cohort',
          api: '/api/v1',
          openapi: '/api/v1/openapi.json',
          models: '/api/v1/models',
          health: '/health',
          ready: '/ready',
          metrics: '/metrics',
        },
      ],
    );
    const health = await fetch(`${root}/health`);
    assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }]);
    const ready = await fetch(`${root}/ready`);
    assert.deepEqual(
      [ready.status, await ready.json()],
      [200, { status: 'ready', checks: { store: 'ok', redis: 'not configured' } }],
    );
  });

  test('/metrics needs the operator token, then counts requests by route pattern and status', async () => {
    assert.deepEqual(await fetch(`${root}/metrics`).then(async (r) => [r.status, await r.json()]), [
      401,
      { error: { code: 401, message: 'missing authentication header' } },
    ]);
    const wrong = await fetch(`${root}/metrics`, { headers: { authorization: 'Bearer nope' } });
    assert.deepEqual(
      [wrong.status, await wrong.json()],
      [401, { error: { code: 401, message: 'invalid or revoked API key' } }],
    );
    assert.equal((await gw.call('GET', '/interns/5b0e2f9c-1111-4111-8111-111111111111')).status, 404);
    assert.equal(
      (
        await gw.call('POST', '/chat/completions', {
          key: gw.keys.api_key,
          body: { model: 'local/scripted', messages: [{ role: 'user', content: '/say hi' }] },
        })
      ).status,
      200,
    );
    const res = await fetch(`${root}/metrics`, { headers: { authorization: 'Bearer metrics-secret-1' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /^cohort_http_requests_total\{route="\/api\/v1\/interns\/:id",method="GET",status="404"\} 1$/m);
    assert.match(
      text,
      /^cohort_http_requests_total\{route="\/api\/v1\/chat\/completions",method="POST",status="200"\} 1$/m,
    );
    assert.match(
      text,
      /^cohort_http_request_duration_seconds_count\{route="\/api\/v1\/chat\/completions",method="POST"\} 1$/m,
    );
    assert.match(text, /^cohort_open_streams 0$/m);
    assert.match(text, /^# TYPE cohort_interns gauge$/m);
    assert.match(text, /^# TYPE cohort_upstream_errors_total counter$/m);
    assert.match(text, /^cohort_process_resident_memory_bytes \d+$/m);
    assert.ok(!text.includes(gw.keys.api_key) && !text.includes('metrics-secret-1'));
  });

  test('GET /api/v1/models: local/scripted with its price; a key is required', async () => {
    const res = await gw.call('GET', '/models', { key: gw.keys.api_key });
    assert.equal(res.status, 200);
    assert.equal(res.body.total_count, res.body.data.length);
    assert.deepEqual(res.body.links, { next: null });
    const scripted = res.body.data[0];
    assert.deepEqual(
      [scripted.id, scripted.name, scripted.context_length, scripted.pricing],
      [
        'local/scripted',
        'cohort: scripted model (deterministic, offline)',
        null,
        { prompt: '0.000001', completion: '0.000002' },
      ],
    );
    // Nothing else is routable on a gateway without provider configuration or credentials.
    assert.deepEqual(
      res.body.data.map((m: { id: string }) => m.id),
      ['local/scripted'],
    );
    assert.equal((await gw.call('GET', '/models', { key: null })).status, 401);
  });

  test("a BYOK credential makes its provider's models routable; the SDK reads the list", async () => {
    const created = await gw.call('POST', '/byok', {
      body: {
        provider: 'openai',
        key: 'sk-test-0123456789abcdef',
        allowed_models: ['openai/gpt-4o-mini', 'openai/o3'],
      },
    });
    assert.equal(created.status, 201);
    const sdk = new OpenRouter({ apiKey: gw.keys.api_key, serverURL: gw.url });
    const page = await sdk.models.list();
    const models = page.result.data.map((m) => [m.id, m.pricing.prompt, m.pricing.completion]);
    assert.deepEqual(models, [
      ['local/scripted', '0.000001', '0.000002'],
      ['openai/gpt-4o-mini', '0.00000015', '0.0000006'],
      ['openai/o3', '-1', '-1'],
    ]);
  });
});

describe('readiness of the store', () => {
  test('a store that answers but cannot write (its last write refused for room) makes the gateway not ready, saying why', async () => {
    const gw = await startTestGateway();
    const { createHealth } = await import('./health.ts');
    let fault: string | null = 'could not extend file "base/5/16675": No space left on device';
    const health = await createHealth({ db: gw.ctx.store.db, storeWrites: () => fault });
    try {
      assert.deepEqual(await health.ready(), {
        ready: false,
        checks: {
          store: 'failed: cannot write: could not extend file "base/5/16675": No space left on device',
          redis: 'not configured',
        },
      });
      fault = null;
      assert.deepEqual(await health.ready(), { ready: true, checks: { store: 'ok', redis: 'not configured' } });
    } finally {
      await health.close();
      await gw.close();
    }
  });
});

describe('readiness with Redis', () => {
  test('a Redis that does not answer makes the gateway not ready, naming the check', async () => {
    const gw = await startTestGateway();
    const { createHealth } = await import('./health.ts');
    const health = await createHealth({ db: gw.ctx.store.db, redisUrl: 'redis://127.0.0.1:1' });
    try {
      const r = await health.ready();
      assert.equal(r.ready, false);
      assert.equal(r.checks.store, 'ok');
      assert.match(r.checks.redis, /^failed: /);
    } finally {
      await health.close();
      await gw.close();
    }
  });

  test('ready when Redis answers', { skip: redisUrl ? false : 'REDIS_URL is not set' }, async () => {
    const up = await startTestGateway({ env: { REDIS_URL: redisUrl! } });
    try {
      const r = await fetch(up.url.replace(/\/api\/v1$/, '/ready'));
      assert.deepEqual([r.status, await r.json()], [200, { status: 'ready', checks: { store: 'ok', redis: 'ok' } }]);
    } finally {
      await up.close();
    }
  });
});
