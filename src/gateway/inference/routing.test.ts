import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyPreset, disabledToolIn, presetSlugOf, resolveRequest, type RequestBody } from './routing.ts';
import { shouldStoreBodies } from './request-log.ts';
import { ApiError } from '../errors.ts';

const msg = (content: string) => ({ role: 'user' as const, content });

test('presetSlugOf: @preset/<slug> as the model, else the preset field', () => {
  const rows: [Partial<RequestBody>, string | null][] = [
    [{ model: '@preset/brief' }, 'brief'],
    [{ model: '@preset/brief', preset: 'other' }, 'brief'],
    [{ preset: 'other' }, 'other'],
    [{ model: 'openai/gpt-4o' }, null],
    [{}, null],
  ];
  for (const [body, slug] of rows) assert.equal(presetSlugOf(body), slug, JSON.stringify(body));
  assert.throws(
    () => presetSlugOf({ model: '@preset/', preset: 'other' }),
    (e) =>
      e instanceof ApiError &&
      e.status === 400 &&
      e.message === 'invalid request parameters: model: @preset/ needs a preset slug after it',
  );
});

test('applyPreset: the request wins field by field; the system prompt leads unless the request has one', () => {
  const preset = { systemPrompt: 'Be brief.', config: { model: 'openai/gpt-4o', max_tokens: 77, temperature: 0.2 } };
  const a = applyPreset({ model: '@preset/x', messages: [msg('hi')], temperature: 1 }, preset);
  assert.deepEqual(a, {
    model: 'openai/gpt-4o',
    max_tokens: 77,
    temperature: 1,
    messages: [{ role: 'system', content: 'Be brief.' }, msg('hi')],
  });
  const b = applyPreset(
    { model: 'local/scripted', messages: [{ role: 'system', content: 'Mine.' }, msg('hi')] },
    preset,
  );
  assert.equal(b.model, 'local/scripted');
  assert.deepEqual(b.messages[0], { role: 'system', content: 'Mine.' });
  assert.equal(applyPreset({ messages: [msg('x')] }, { systemPrompt: '', config: {} }).messages.length, 1);
});

test("applyPreset: a request's models or fallbacks replace the preset's, whichever of the two either used", () => {
  const withModels = { systemPrompt: '', config: { model: 'openai/gpt-4o', models: ['groq/a'], max_tokens: 7 } };
  const withFallbacks = { systemPrompt: '', config: { model: 'openai/gpt-4o', fallbacks: [{ model: 'groq/a' }] } };
  const body = { model: '@preset/x', messages: [msg('hi')] };
  assert.deepEqual(applyPreset({ ...body, fallbacks: [{ model: 'groq/b' }] }, withModels), {
    model: 'openai/gpt-4o',
    max_tokens: 7,
    fallbacks: [{ model: 'groq/b' }],
    messages: [msg('hi')],
  });
  assert.deepEqual(applyPreset({ ...body, models: ['groq/b'] }, withFallbacks), {
    model: 'openai/gpt-4o',
    models: ['groq/b'],
    messages: [msg('hi')],
  });
  assert.deepEqual(applyPreset(body, withModels), {
    model: 'openai/gpt-4o',
    models: ['groq/a'],
    max_tokens: 7,
    messages: [msg('hi')],
  });
  assert.deepEqual(
    resolveRequest(applyPreset({ ...body, fallbacks: [{ model: 'groq/b' }] }, withModels), { defaultModel: null })
      .models,
    ['openai/gpt-4o', 'groq/b'],
  );
});

test('resolveRequest: model order, fallbacks, ZDR, server tools, and what is stripped before upstream', () => {
  const r = resolveRequest(
    {
      model: 'openai/gpt-4o',
      fallbacks: [{ model: 'groq/llama' }, { model: 'openai/gpt-4o' }],
      provider: { zdr: true },
      plugins: [{ id: 'web' }],
      tools: [{ type: 'service:web_fetch' }, { type: 'function', function: { name: 'f' } }],
      session_id: 's',
      stream: true,
      temperature: 0.5,
      messages: [msg('x')],
    },
    { defaultModel: null },
  );
  assert.deepEqual(r.models, ['openai/gpt-4o', 'groq/llama']);
  assert.equal(r.requireZdr, true);
  assert.deepEqual(r.serverTools, ['service:web_fetch', 'service:web_search']);
  assert.deepEqual(r.upstream, {
    temperature: 0.5,
    messages: [msg('x')],
    tools: [{ type: 'function', function: { name: 'f' } }],
  });
  assert.deepEqual(resolveRequest({ messages: [msg('x')] }, { defaultModel: 'local/scripted' }).models, [
    'local/scripted',
  ]);
  assert.deepEqual(
    resolveRequest({ models: ['a/b', 'c/d'], messages: [msg('x')] }, { defaultModel: 'local/scripted' }).models,
    ['local/scripted', 'a/b', 'c/d'],
  );
  assert.equal(
    resolveRequest({ tools: [{ type: 'service:shell' }], messages: [msg('x')] }, { defaultModel: 'a/b' }).upstream
      .tools,
    undefined,
  );
});

test('resolveRequest refusals name the field', () => {
  const rows: [RequestBody, RegExp][] = [
    [{ messages: [msg('x')] }, /model: required/],
    [
      { model: 'a/b', models: ['c/d'], fallbacks: [{ model: 'e/f' }], messages: [msg('x')] },
      /fallbacks: cannot be combined/,
    ],
    [{ model: 'a/b', models: ['c/d', 'e/f', 'g/h', 'i/j'], messages: [msg('x')] }, /models: at most 3/],
  ];
  for (const [body, re] of rows) {
    assert.throws(
      () => resolveRequest(body, { defaultModel: null }),
      (e: ApiError) => e.status === 400 && re.test(e.message),
    );
  }
});

test('disabledToolIn', () => {
  assert.equal(disabledToolIn(['service:web_search'], ['service:web_search']), 'service:web_search');
  assert.equal(disabledToolIn(['service:web_fetch'], ['service:web_search']), null);
  assert.equal(disabledToolIn(['service:web_search'], null), null);
  assert.equal(disabledToolIn([], ['service:shell']), null);
});

test('shouldStoreBodies: enabled, key filter, sampling', () => {
  const rows: [Parameters<typeof shouldStoreBodies>[0], string, number, boolean][] = [
    [{ enabled: false, samplingRate: 1, apiKeyIds: null }, 'k', 0, false],
    [{ enabled: true, samplingRate: 1, apiKeyIds: null }, 'k', 0.99, true],
    [{ enabled: true, samplingRate: 1, apiKeyIds: [] }, 'k', 0.5, true],
    [{ enabled: true, samplingRate: 1, apiKeyIds: ['other'] }, 'k', 0, false],
    [{ enabled: true, samplingRate: 1, apiKeyIds: ['other', 'k'] }, 'k', 0, true],
    [{ enabled: true, samplingRate: 0.25, apiKeyIds: null }, 'k', 0.2, true],
    [{ enabled: true, samplingRate: 0.25, apiKeyIds: null }, 'k', 0.3, false],
  ];
  for (const [io, key, random, expected] of rows)
    assert.equal(shouldStoreBodies(io, { apiKeyId: key, random }), expected, JSON.stringify([io, key, random]));
});
