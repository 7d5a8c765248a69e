// Every request option's bad values on every route that accepts it: /chat/completions, /messages,
// /responses and /presets/{slug}/messages give the same 400 naming the same field, and nothing
// reaches a provider or the preset store.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { space, user, type Space } from '../../../test/helpers/inference-fixtures.ts';

/** [field path the message names, the body fields that are bad]. */
const BAD: [string, Record<string, unknown>][] = [
  ['speed', { speed: 'warp' }],
  ['route', { route: 'model' }],
  ['session_id', { session_id: '' }],
  ['session_id', { session_id: 's'.repeat(257) }],
  ['user', { user: 'u'.repeat(257) }],
  ['cache_control.type', { cache_control: { type: 'persistent' } }],
  ['cache_control.ttl', { cache_control: { type: 'ephemeral', ttl: '2h' } }],
  ['thinking.type', { thinking: { type: 'sometimes' } }],
  ['thinking.budget_tokens', { thinking: { type: 'enabled', budget_tokens: 10 } }],
  ['reasoning.effort', { reasoning: { effort: 'extreme' } }],
  ['reasoning.depth', { reasoning: { depth: 3 } }],
  ['reasoning.exclude', { reasoning: { exclude: true } }],
  ['reasoning.summary', { reasoning: { summary: 'short' } }],
  ['output_config.effort', { output_config: { effort: 'extreme' } }],
  ['output_config.task_budget', { output_config: { task_budget: { type: 'tokens', total: 5 } } }],
  ['response_format.type', { response_format: { type: 'yaml' } }],
  ['response_format.json_schema', { response_format: { type: 'json_schema' } }],
  ['metadata.k', { metadata: { k: 5 } }],
  ['provider.sort', { provider: { sort: 'cheapest' } }],
  ['provider.allow_fallbacks', { provider: { allow_fallbacks: 'yes' } }],
  ['provider.only', { provider: { only: 'openai' } }],
  ['provider.max_price.prompt', { provider: { max_price: { prompt: -1 } } }],
  ['provider.max_price.request', { provider: { max_price: { request: 1 } } }],
  ['provider.quantizations', { provider: { quantizations: ['fp8'] } }],
  ['provider.fastest', { provider: { fastest: true } }],
  ['plugins.0.cost_tier', { plugins: [{ id: 'auto-router', cost_tier: 'free' }] }],
  ['plugins.0.pin_model', { plugins: [{ id: 'auto-router', pin_model: 'yes' }] }],
  ['plugins.0.teleport', { plugins: [{ id: 'auto-router', teleport: true }] }],
  ['plugins.0.id', { plugins: [{ id: 'teleport' }] }],
  ['plugins.0.id', { plugins: [{ id: 'response-healing' }] }],
];

describe('request options: one validation on every route', () => {
  let gw: TestGateway;
  let s: Space;
  before(async () => {
    gw = await startTestGateway({ env: { COHORT_ROUTING_CACHE_MS: '1' } });
    s = await space(gw, 'options');
  });
  after(() => gw.close());

  const routes: [string, (extra: Record<string, unknown>) => Promise<{ status: number; body: any }>][] = [
    ['chat', (x) => s.chat({ model: 'local/scripted', messages: [user('/say hi')], ...x })],
    ['messages', (x) => s.messages({ model: 'local/scripted', max_tokens: 8, messages: [user('/say hi')], ...x })],
    ['responses', (x) => s.responses({ model: 'local/scripted', input: '/say hi', ...x })],
    [
      'preset',
      (x) =>
        gw.call('POST', '/presets/opts/messages', {
          body: { model: 'local/scripted', messages: [user('x')], ...x },
        }),
    ],
  ];

  for (const [name, send] of routes)
    test(`${name}: each bad value is a 400 naming its field`, async () => {
      const wrong: string[] = [];
      for (const [field, extra] of BAD) {
        const res = await send(extra);
        const named = new RegExp(`(: |; )${field.replace(/\./g, '\\.')}: `).test(res.body?.error?.message ?? '');
        if (res.status !== 400 || !named)
          wrong.push(`${JSON.stringify(extra)} -> ${res.status} ${res.body?.error?.message}`);
      }
      assert.deepEqual(wrong, []);
    });

  test('a good value of each option is accepted on the model routes', async () => {
    const good = {
      speed: 'fast',
      route: 'fallback',
      session_id: 'conv-1',
      user: 'end-user-1',
      cache_control: { type: 'ephemeral', ttl: '1h' },
      reasoning: { effort: 'low' },
      metadata: { trace_id: 't-1' },
      provider: { sort: 'latency', allow_fallbacks: false, max_price: { prompt: 5, completion: '10.5' } },
      plugins: [{ id: 'auto-router', allowed_models: ['local/*'], enabled: true }],
    };
    const chat = await s.chat({ model: 'cohort/auto', messages: [user('/say ok')], ...good });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.equal(chat.body.choices[0].message.content, 'ok');
    const msgs = await s.messages({
      model: 'cohort/auto',
      max_tokens: 8,
      messages: [user('/say ok')],
      thinking: { type: 'enabled', budget_tokens: 2048 },
      ...good,
    });
    assert.equal(msgs.status, 200, JSON.stringify(msgs.body));
  });
});
