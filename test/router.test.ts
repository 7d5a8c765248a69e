// The router end to end: `cohort/auto` served by the model the auto-router plugin's settings and the
// endpoints' health choose, reported in the response's `model`, the log and x-cohort-route; its
// settings' mistakes refused by name; and no choice reaching another account's BYOK models.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { SHARED_OPENAI_KEY, space, upstreamEnv, user, type Space } from './helpers/inference-fixtures.ts';

const AUTO = 'cohort/auto';
const router = (settings: Record<string, unknown>) => [{ id: 'auto-router', ...settings }];

describe('the router (cohort/auto)', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  let s: Space;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: {
        ...upstreamEnv(up),
        COHORT_PROVIDER_ANTHROPIC_API_KEY: 'sk-ant-shared-000000',
        COHORT_PROVIDER_FIREWORKS_BASE_URL: up.url,
      },
    });
    s = await space(gw, 'router');
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('the choice is the response model, the upstream model, the log and the header', async () => {
    const from = up.received.length;
    const res = await s.chat({
      model: AUTO,
      messages: [user('/say routed')],
      plugins: router({ allowed_models: ['anthropic/*'], cost_tier: 'low' }),
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.model, 'anthropic/claude-3-5-haiku');
    assert.equal(res.body.choices[0].message.content, 'routed');
    assert.deepEqual(
      up.received.slice(from).map((r) => [r.path, r.model]),
      [['/v1/messages', 'claude-3-5-haiku']],
    );
    assert.match(res.headers.get('x-cohort-route')!, /; auto=anthropic\/claude-3-5-haiku; tier=low; sort=default$/);
    const row = (await s.log()).find((r) => r.id === res.body.id)!;
    assert.deepEqual(
      [row.requestedModel, row.model, row.routing],
      [AUTO, 'anthropic/claude-3-5-haiku', 'auto=anthropic/claude-3-5-haiku; tier=low; sort=default'],
    );

    // without the plugin: every routable model, the median price (8 models: the fifth cheapest)
    const plain = await s.chat({ model: AUTO, messages: [user('/say x')] });
    assert.equal(plain.body.model, 'openai/gpt-4.1');
    const dearest = await s.messages({
      model: AUTO,
      max_tokens: 8,
      stream: true,
      messages: [user('/say x')],
      plugins: router({ cost_tier: 'max', excluded_models: ['anthropic/claude-opus-4'] }),
    });
    assert.equal(dearest.status, 200);
    assert.match(dearest.body, /"model":"anthropic\/claude-sonnet-4"/);
  });

  test("the plugin's settings are refused by name where they cannot apply", async () => {
    const rows: [Record<string, unknown>, number, RegExp][] = [
      [
        { model: 'openai/gpt-4o', plugins: router({}) },
        400,
        /plugins\.0: the auto-router plugin chooses the model of cohort\/auto requests/,
      ],
      [{ model: AUTO, plugins: router({ enabled: false }) }, 400, /plugins\.0\.enabled: /],
      [{ model: AUTO, plugins: router({ pin_model: true }) }, 400, /plugins\.0\.pin_model: .*needs session_id/],
      [{ model: AUTO, plugins: router({ allowed_models: ['nobody/*'] }) }, 400, /plugins\.0\.allowed_models: no model/],
    ];
    for (const [body, status, re] of rows) {
      const res = await s.chat({ messages: [user('/say x')], ...body });
      assert.equal(res.status, status, JSON.stringify(body));
      assert.match(res.body.error.message, re);
    }
    // turned off, the plugin leaves a named model alone
    const off = await s.chat({
      model: 'openai/gpt-4o',
      messages: [user('/say x')],
      plugins: router({ enabled: false }),
    });
    assert.equal(off.status, 200);
    assert.equal(off.body.model, 'openai/gpt-4o');
  });

  test('pin_model keeps the session on its first model; health moves the choice off a failing model', async () => {
    const ask = (tier: string, session?: string) =>
      s.chat({
        model: AUTO,
        messages: [user('/say x')],
        ...(session ? { session_id: session } : {}),
        plugins: router({ cost_tier: tier, pin_model: !!session }),
      });
    assert.equal((await ask('low', 'pin-1')).body.model, 'openai/gpt-4o-mini');
    assert.equal((await ask('max', 'pin-1')).body.model, 'openai/gpt-4o-mini');
    assert.equal((await ask('max', 'pin-2')).body.model, 'anthropic/claude-opus-4');

    const pair = router({ allowed_models: ['openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku'], cost_tier: 'low' });
    up.failKey(SHARED_OPENAI_KEY, 503);
    const failed = await s.chat({ model: AUTO, messages: [user('/say x')], plugins: pair });
    const next = await s.chat({ model: AUTO, messages: [user('/say x')], plugins: pair });
    up.failKey(SHARED_OPENAI_KEY, 0);
    assert.deepEqual(
      [failed.status, failed.body.model, next.status, next.body.model],
      [200, 'anthropic/claude-3-5-haiku', 200, 'anthropic/claude-3-5-haiku'],
    );
    const log = await s.log();
    const attempts = (id: string) => log.find((r) => r.id === id)!.attempts;
    // the first tried gpt-4o-mini and fell back; the next chose haiku at once
    assert.deepEqual([attempts(failed.body.id), attempts(next.body.id)], [2, 1]);
  });

  test("a hostile key cannot make the router pick another account's BYOK model", async () => {
    const victim = await space(gw, 'router-victim');
    await victim.credential({
      provider: 'fireworks',
      key: 'sk-fw-victim-0123456789',
      allowed_models: ['fireworks/secret-model'],
    });
    const from = up.received.length;
    const theirs = await victim.chat({
      model: AUTO,
      messages: [user('/say x')],
      plugins: router({ allowed_models: ['fireworks/*'] }),
    });
    assert.equal(theirs.body.model, 'fireworks/secret-model');
    assert.deepEqual(
      up.received.slice(from).map((r) => r.key),
      ['sk-fw-victim-0123456789'],
    );
    const mine = await s.chat({
      model: AUTO,
      messages: [user('/say x')],
      plugins: router({ allowed_models: ['fireworks/*'] }),
    });
    assert.equal(mine.status, 400);
    assert.match(mine.body.error.message, /no model this workspace can route to is left for cohort\/auto/);
    assert.equal(up.received.length, from + 1);
  });
});
