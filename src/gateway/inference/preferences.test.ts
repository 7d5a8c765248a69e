import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrange, type Endpoint, preferencesOf, type Preferences } from './preferences.ts';
import type { EndpointStats } from './endpoint-stats.ts';
import { createEndpointStats, UNHEALTHY_MS, WINDOW } from './endpoint-stats.ts';

const measured = (ttftMs: number, tps: number, successRate: number, healthy = true): EndpointStats => ({
  ttftMs,
  tps,
  successRate,
  healthy,
});
const unmeasured: EndpointStats = { ttftMs: null, tps: null, successRate: null, healthy: true };

const ep = (
  provider: string,
  o: { model?: string; primary?: boolean; price?: [number, number] | null; stats?: EndpointStats },
): Endpoint<string> => ({
  route: `${provider}:${o.model ?? 'm/x'}`,
  model: o.model ?? 'm/x',
  provider,
  primary: o.primary ?? false,
  price: o.price ? { prompt: o.price[0], completion: o.price[1] } : null,
  stats: o.stats ?? unmeasured,
});

// openai is the model's own provider; together is cheapest, groq fastest, fireworks unmeasured and unpriced.
const four = [
  ep('openai', { primary: true, price: [2, 8], stats: measured(300, 50, 1) }),
  ep('together', { price: [1, 1], stats: measured(100, 20, 0.5) }),
  ep('groq', { price: [5, 5], stats: measured(50, 200, 1) }),
  ep('fireworks', {}),
];
const base: Preferences = preferencesOf({}, null);
const order = (pref: Partial<Preferences>, eps = four, sticky?: { provider: string; model: string }) =>
  arrange([eps], { ...base, ...pref }, sticky).endpoints.map((e) => e.provider);

test('sorts: default, price, throughput, latency, exacto', () => {
  const rows: [Partial<Preferences>, string[]][] = [
    [{}, ['openai', 'together', 'groq', 'fireworks']],
    [{ sort: 'price' }, ['together', 'openai', 'groq', 'fireworks']],
    [{ sort: 'throughput' }, ['groq', 'openai', 'together', 'fireworks']],
    [{ sort: 'latency' }, ['groq', 'together', 'openai', 'fireworks']],
    // success rate first (openai and groq at 1), then price
    [{ sort: 'exacto' }, ['openai', 'groq', 'together', 'fireworks']],
  ];
  for (const [pref, want] of rows) assert.deepEqual(order(pref), want, JSON.stringify(pref));
});

test('filters and order: only, ignore, max_price, order, allow_fallbacks false', () => {
  const rows: [Partial<Preferences>, string[]][] = [
    [{ only: ['groq', 'fireworks'] }, ['groq', 'fireworks']],
    [{ ignore: ['openai', 'groq'] }, ['together', 'fireworks']],
    // an unpriced endpoint never meets a price cap
    [{ maxPrice: { prompt: 2 } }, ['openai', 'together']],
    [{ maxPrice: { prompt: 5, completion: 5 } }, ['together', 'groq']],
    [{ order: ['fireworks', 'groq'] }, ['fireworks', 'groq', 'openai', 'together']],
    [{ order: ['groq'], sort: 'price' }, ['groq', 'together', 'openai', 'fireworks']],
    [{ allowFallbacks: false, sort: 'latency' }, ['groq']],
    [{ allowFallbacks: false, only: ['nobody'] }, []],
  ];
  for (const [pref, want] of rows) assert.deepEqual(order(pref), want, JSON.stringify(pref));
  assert.equal(arrange([four], { ...base, only: ['groq'] }).excluded, 3);
});

test('health: an endpoint that failed lately goes after the healthy ones, whatever the sort', () => {
  const sick = [four[0]!, { ...four[1]!, stats: measured(100, 20, 0.5, false) }, four[2]!];
  assert.deepEqual(order({ sort: 'price' }, sick), ['openai', 'groq', 'together']);
});

test('session: the sticky endpoint leads while healthy, not over an explicit order', () => {
  const sticky = { provider: 'groq', model: 'm/x' };
  assert.deepEqual(order({ sort: 'price' }, four, sticky), ['groq', 'together', 'openai', 'fireworks']);
  assert.deepEqual(order({ order: ['together'] }, four, sticky), ['together', 'openai', 'groq', 'fireworks']);
  const sick = four.map((e) => (e.provider === 'groq' ? { ...e, stats: measured(50, 200, 1, false) } : e));
  assert.deepEqual(order({ sort: 'price' }, sick, sticky), ['together', 'openai', 'fireworks', 'groq']);
});

test('partition: model keeps fallback models in order; none sorts every endpoint together', () => {
  const a = [ep('openai', { model: 'a/x', primary: true, price: [9, 9] }), ep('groq', { model: 'a/x', price: [3, 3] })];
  const b = [ep('together', { model: 'b/y', primary: true, price: [1, 1] })];
  const routes = (p: Partial<Preferences>) => arrange([a, b], { ...base, ...p }).endpoints.map((e) => e.route);
  assert.deepEqual(routes({ sort: 'price' }), ['groq:a/x', 'openai:a/x', 'together:b/y']);
  assert.deepEqual(routes({ sort: 'price', partition: 'none' }), ['together:b/y', 'groq:a/x', 'openai:a/x']);
  assert.deepEqual(routes({ allowFallbacks: false }), ['openai:a/x', 'together:b/y']);
});

test('preferencesOf: the request over the workspace default; speed fast; the route alias', () => {
  const rows: [Parameters<typeof preferencesOf>[0], string | null, Partial<Preferences>][] = [
    [{}, null, { sort: null, partition: 'model', allowFallbacks: true }],
    [{}, 'latency', { sort: 'latency' }],
    [{ provider: { sort: 'price' } }, 'latency', { sort: 'price' }],
    [{ provider: { sort: { by: 'throughput', partition: 'none' } } }, null, { sort: 'throughput', partition: 'none' }],
    [{ speed: 'fast' }, null, { sort: 'throughput' }],
    [{ speed: 'fast' }, 'price', { sort: 'throughput' }],
    [{ speed: 'fast', provider: { sort: 'latency' } }, null, { sort: 'latency' }],
    [{ speed: 'standard' }, 'price', { sort: 'price' }],
    [{ route: 'sort' }, null, { partition: 'none' }],
    [{ route: 'fallback' }, null, { partition: 'model' }],
    [{ route: 'sort', provider: { sort: { partition: 'model' } } }, null, { partition: 'model' }],
    [{ provider: { allow_fallbacks: false } }, null, { allowFallbacks: false }],
    [{ provider: { max_price: { prompt: '1.5' } } }, null, { maxPrice: { prompt: 1.5, completion: undefined } }],
  ];
  for (const [body, ws, want] of rows) {
    const got = preferencesOf(body, ws);
    assert.deepEqual(
      Object.fromEntries(Object.keys(want).map((k) => [k, got[k as keyof Preferences]])),
      want,
      JSON.stringify([body, ws]),
    );
  }
});

test('endpoint stats: medians over a bounded window, success rate, health after a failure', () => {
  let now = 1_000_000;
  const s = createEndpointStats({ now: () => now });
  assert.deepEqual(s.get('k'), unmeasured);
  for (const ttft of [300, 100, 200]) s.success('k', { ttftMs: ttft, tps: ttft / 10 });
  s.failure('k');
  assert.deepEqual(s.get('k'), { ttftMs: 200, tps: 20, successRate: 0.75, healthy: false });
  now += UNHEALTHY_MS;
  assert.equal(s.get('k').healthy, true);
  for (let i = 0; i < WINDOW; i++) s.success('k', { ttftMs: 5, tps: null });
  assert.deepEqual(s.get('k'), { ttftMs: 5, tps: 20, successRate: 1, healthy: true });
});
