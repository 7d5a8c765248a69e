import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STYLES, type BodyStyle } from './preset-body.ts';
import { describeIssues } from '../http/validate.ts';

function draft(style: BodyStyle, body: unknown) {
  const { schema, toDraft } = STYLES[style];
  return toDraft(schema.parse(body) as never);
}
function problem(style: BodyStyle, body: unknown): string {
  const r = STYLES[style].schema.safeParse(body);
  assert.equal(r.success, false, JSON.stringify(body));
  return describeIssues(r.error!);
}

test('messages style: system string or text blocks, stop_sequences, non-config fields dropped', () => {
  const rows: [unknown, string, Record<string, unknown>][] = [
    [
      { model: 'a/b', max_tokens: 10, system: 'S', messages: [{ role: 'user', content: 'hi' }], stream: true },
      'S',
      { model: 'a/b', max_tokens: 10 },
    ],
    [
      {
        system: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
      },
      'one\ntwo',
      { system_cache_control: { type: 'ephemeral', ttl: '1h' } },
    ],
    [{ stop_sequences: ['X'], stop: 'ignored in this style', prompt: 'p' }, '', { stop: ['X'] }],
    [{ temperature: null, speed: null, route: 'fallback', user: 'u1' }, '', { route: 'fallback', user: 'u1' }],
    [{ unknown_field: { deep: 1 } }, '', {}],
  ];
  for (const [body, system, config] of rows)
    assert.deepEqual(draft('messages', body), { systemPrompt: system, config }, JSON.stringify(body));
});

test('chat style: system and developer messages joined, max_completion_tokens wins, stop string becomes a list', () => {
  const body = {
    messages: [
      { role: 'system', content: 'A' },
      { role: 'user', content: 'ignored' },
      { role: 'developer', content: [{ type: 'text', text: 'B' }] },
    ],
    max_tokens: 9,
    max_completion_tokens: 5,
    stop: 'END',
    stream: true,
  };
  assert.deepEqual(draft('chat', body), { systemPrompt: 'A\n\nB', config: { max_tokens: 5, stop: ['END'] } });
  assert.deepEqual(draft('chat', { max_tokens: 9, stop: ['a', 'b'] }), {
    systemPrompt: '',
    config: { max_tokens: 9, stop: ['a', 'b'] },
  });
});

test('responses style: instructions and max_output_tokens; input ignored', () => {
  assert.deepEqual(
    draft('responses', { instructions: 'I', max_output_tokens: 7, input: 'hello', max_tokens: 'not config here' }),
    {
      systemPrompt: 'I',
      config: { max_tokens: 7 },
    },
  );
});

test('every config parameter of a preset is kept with its field name', () => {
  const config = {
    model: 'openai/gpt-4o',
    max_tokens: 100,
    temperature: 0.5,
    top_p: 0.9,
    top_k: 40,
    frequency_penalty: 0.1,
    presence_penalty: -0.1,
    repetition_penalty: 1.1,
    min_p: 0.05,
    top_a: 0.1,
    seed: 7,
    cache_control: { type: 'ephemeral' },
    fallbacks: [{ model: 'a/b' }, { model: 'c/d' }, { model: 'e/f' }],
    output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object' } } },
    plugins: [
      {
        id: 'auto-router',
        allowed_models: ['anthropic/*'],
        excluded_models: ['x/y'],
        cost_tier: 'low',
        enabled: true,
        pin_model: false,
      },
      { id: 'web', max_results: 3 },
    ],
    provider: { allow_fallbacks: false, sort: { by: 'price', partition: 'none' }, order: ['openai'] },
    route: 'sort',
    session_id: 's'.repeat(256),
    speed: 'fast',
    stop_server_tools_when: [
      { type: 'step_count_is', step_count: 3 },
      { type: 'max_cost', max_cost_in_dollars: 0.5 },
    ],
    trace: {
      trace_id: 't',
      trace_name: 'n',
      span_name: 's',
      generation_name: 'g',
      parent_span_id: 'p',
      custom: 'kept',
    },
    metadata: { user_id: 'u' },
    user: 'u'.repeat(256),
  };
  assert.deepEqual(draft('messages', { ...config, system: 'S' }).config, config);
});

test('bounds: a violation names the field', () => {
  const rows: [BodyStyle, unknown, RegExp][] = [
    ['messages', { fallbacks: [{ model: 'a' }, { model: 'b' }, { model: 'c' }, { model: 'd' }] }, /^fallbacks: /],
    ['messages', { fallbacks: [{ model: 'a', provider: 'x' }] }, /^fallbacks\.0: |provider: unknown field/],
    ['messages', { fallbacks: [{ model: 'a' }], models: ['b'] }, /^fallbacks: cannot be combined with models/],
    ['messages', { models: ['a', 'b', 'c', 'd'] }, /^models: /],
    ['chat', { fallbacks: [{ model: 'a' }], models: ['b'] }, /^fallbacks: /],
    ['messages', { user: 'u'.repeat(257) }, /^user: /],
    ['messages', { session_id: 's'.repeat(257) }, /^session_id: /],
    ['messages', { route: 'model' }, /^route: /],
    ['messages', { speed: 'slow' }, /^speed: /],
    ['messages', { stop_server_tools_when: [] }, /^stop_server_tools_when: /],
    [
      'messages',
      { stop_server_tools_when: [{ type: 'step_count_is', step_count: 0 }] },
      /^stop_server_tools_when\.0\.step_count: /,
    ],
    ['messages', { cache_control: { type: 'persistent' } }, /^cache_control\.type: /],
    ['messages', { provider: { allow_fallbacks: 'yes' } }, /^provider\.allow_fallbacks: /],
    ['messages', { provider: { sort: 'cheapest' } }, /^provider\.sort: /],
    ['messages', { plugins: [{ id: 'auto-router', cost_tier: 'free' }] }, /^plugins\.0\.cost_tier: /],
    ['messages', { plugins: [{ id: 'teleport' }] }, /^plugins\.0\.id: /],
    ['messages', { output_config: { effort: 'extreme' } }, /^output_config\.effort: /],
    ['messages', { temperature: 3 }, /^temperature: /],
    ['messages', { max_tokens: 0 }, /^max_tokens: /],
    ['messages', { model: '' }, /^model: /],
    ['messages', { system: 5 }, /^system: /],
    ['messages', { metadata: { k: 5 } }, /^metadata\.k: /],
    ['chat', { messages: [{ role: 'system', content: 5 }] }, /^messages\.0\.content: /],
    ['chat', { max_completion_tokens: -1 }, /^max_completion_tokens: /],
    ['responses', { instructions: ['x'] }, /^instructions: /],
    ['responses', { max_output_tokens: 1.5 }, /^max_output_tokens: /],
    ['messages', [], /^body: /],
  ];
  for (const [style, body, re] of rows) assert.match(problem(style, body), re, JSON.stringify(body));
});
