// The request options as the provider receives them, seen in a recording upstream's body: caching,
// thinking and effort, structured output and the end user, to an Anthropic-style upstream and to an
// OpenAI-style one; and cached tokens reported back in the usage.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { space, upstreamEnv, user, type Space } from './helpers/inference-fixtures.ts';
import { JSON_MODE_INSTRUCTION } from '../src/gateway/inference/providers/options.ts';

describe('request options in each provider dialect', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  let s: Space;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: { ...upstreamEnv(up), COHORT_PROVIDER_ANTHROPIC_API_KEY: 'sk-ant-shared-000000' },
    });
    s = await space(gw, 'dialects');
  });
  after(async () => {
    await gw.close();
    await up.close();
  });
  const last = () => up.received.at(-1)!.body as Record<string, any>;

  test('anthropic: top-level caching marks the last block, block marks are kept, and a repeat reads from cache', async () => {
    const body = {
      model: 'anthropic/claude-sonnet-4',
      max_tokens: 64,
      cache_control: { type: 'ephemeral' },
      system: [
        { type: 'text', text: 'Long stable instructions.', cache_control: { type: 'ephemeral', ttl: '1h' } },
        { type: 'text', text: 'More.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: '/say first' }] },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: '/say cached' }] },
      ],
    };
    const first = await s.messages(body);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const sent = last();
    assert.deepEqual(sent.system, [
      { type: 'text', text: 'Long stable instructions.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: 'More.' },
    ]);
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: '/say first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
      { role: 'user', content: [{ type: 'text', text: '/say cached', cache_control: { type: 'ephemeral' } }] },
    ]);
    assert.equal(first.body.usage.cache_read_input_tokens, 0);

    const again = await s.chat({
      model: 'anthropic/claude-sonnet-4',
      max_tokens: 64,
      cache_control: { type: 'ephemeral' },
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'Long stable instructions.', cache_control: { type: 'ephemeral', ttl: '1h' } },
            { type: 'text', text: 'More.' },
          ],
        },
        user('/say first'),
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: '/say cached' }] },
      ],
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(last().messages, sent.messages);
    const u = again.body.usage;
    assert.ok(u.prompt_tokens > 0);
    assert.deepEqual(u.prompt_tokens_details, { cached_tokens: u.prompt_tokens });
    const row = (await s.log()).find((r) => r.id === again.body.id)!;
    assert.equal(row.cachedTokens, u.prompt_tokens);
  });

  test("a preset's system breakpoint and options reach the Anthropic upstream", async () => {
    const made = await gw.call('POST', '/presets/cached/messages', {
      body: {
        model: 'anthropic/claude-sonnet-4',
        max_tokens: 32,
        system: [{ type: 'text', text: 'Stable.', cache_control: { type: 'ephemeral' } }],
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [user('x')],
      },
    });
    assert.ok(made.status === 200 || made.status === 201, JSON.stringify(made.body));
    // presets live in the management key's workspace, the default one, which the bootstrap key is bound to
    const res = await s.chat({ model: '@preset/cached', messages: [user('/say x')] }, gw.keys.api_key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = last();
    assert.deepEqual(
      [got.system, got.thinking, got.max_tokens],
      [
        [{ type: 'text', text: 'Stable.', cache_control: { type: 'ephemeral' } }],
        { type: 'enabled', budget_tokens: 1024 },
        1056,
      ],
    );
  });

  test('anthropic: thinking, effort and structured output', async () => {
    const rows: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { thinking: { type: 'enabled', budget_tokens: 2048 } },
        { thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 2048 + 64 },
      ],
      [
        { reasoning: { effort: 'high' } },
        { thinking: { type: 'enabled', budget_tokens: 16384 }, max_tokens: 16384 + 64 },
      ],
      [
        { output_config: { effort: 'low' } },
        { thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 2048 + 64 },
      ],
      [{ thinking: { type: 'disabled' } }, { thinking: undefined, max_tokens: 64 }],
      [
        { output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } },
        { output_config: { format: { type: 'json_schema', schema: { type: 'object' } } }, thinking: undefined },
      ],
    ];
    for (const [extra, want] of rows) {
      const res = await s.messages({
        model: 'anthropic/claude-sonnet-4',
        max_tokens: 64,
        messages: [user('/say x')],
        ...extra,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const got = last();
      assert.deepEqual(Object.fromEntries(Object.keys(want).map((k) => [k, got[k]])), want, JSON.stringify(extra));
    }
    // JSON mode has no Anthropic field: the model is told in the system prompt
    const json = await s.chat({
      model: 'anthropic/claude-sonnet-4',
      response_format: { type: 'json_object' },
      messages: [{ role: 'system', content: 'Be brief.' }, user('/say {}')],
    });
    assert.equal(json.status, 200, JSON.stringify(json.body));
    assert.deepEqual([last().system, last().output_config], [`Be brief.\n\n${JSON_MODE_INSTRUCTION}`, undefined]);
    // a reasoning summary (Codex asks for one on every request) is Anthropic's summarized thinking
    const codex = await s.responses({
      model: 'anthropic/claude-sonnet-4',
      input: '/say x',
      max_output_tokens: 64,
      reasoning: { effort: 'low', summary: 'auto' },
    });
    assert.equal(codex.status, 200, JSON.stringify(codex.body));
    assert.deepEqual(last().thinking, { type: 'enabled', budget_tokens: 2048, display: 'summarized' });
    assert.deepEqual(codex.body.reasoning, { effort: 'low', summary: 'auto' });
    const end = await s.chat({ model: 'anthropic/claude-sonnet-4', user: 'end-user-7', messages: [user('/say x')] });
    assert.equal(end.status, 200);
    assert.deepEqual(last().metadata, { user_id: 'end-user-7' });
  });

  test('openai: reasoning as reasoning_effort, structured output as response_format, no top-level cache mark', async () => {
    const rows: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ reasoning: { effort: 'xhigh' } }, { reasoning_effort: 'high', reasoning: undefined }],
      [{ thinking: { type: 'enabled', budget_tokens: 4096 } }, { reasoning_effort: 'medium', thinking: undefined }],
      [
        { output_config: { effort: 'low' }, cache_control: { type: 'ephemeral' } },
        { reasoning_effort: 'low', cache_control: undefined, output_config: undefined },
      ],
      [
        { output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } },
        {
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'output', schema: { type: 'object' }, strict: true },
          },
        },
      ],
      [
        { user: 'end-user-7', metadata: { trace_id: 't' } },
        { user: 'end-user-7', metadata: undefined },
      ],
    ];
    for (const [extra, want] of rows) {
      const res = await s.messages({ model: 'openai/gpt-4o', max_tokens: 64, messages: [user('/say x')], ...extra });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const got = last();
      assert.deepEqual(Object.fromEntries(Object.keys(want).map((k) => [k, got[k]])), want, JSON.stringify(extra));
    }
    const responses = await s.responses({
      model: 'openai/gpt-4o',
      input: '/say x',
      reasoning: { effort: 'minimal' },
      text: { format: { type: 'json_schema', name: 'n', schema: { type: 'object' } } },
    });
    assert.equal(responses.status, 200, JSON.stringify(responses.body));
    assert.equal(last().reasoning_effort, 'minimal');
    assert.deepEqual(last().response_format, {
      type: 'json_schema',
      json_schema: { name: 'n', schema: { type: 'object' } },
    });
    // chat completions has no summary field: an OpenAI-style upstream gets the effort only
    const summarized = await s.responses({
      model: 'openai/gpt-4o',
      input: '/say x',
      reasoning: { effort: 'low', summary: 'detailed' },
    });
    assert.equal(summarized.status, 200, JSON.stringify(summarized.body));
    assert.deepEqual([last().reasoning_effort, last().reasoning], ['low', undefined]);
  });
});
