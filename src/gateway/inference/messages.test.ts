import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { anthropicFrames, space, upstreamEnv, user, type Space } from '../../../test/helpers/inference-fixtures.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const tools = [
  { name: 'shell', input_schema: { type: 'object' } },
  { name: 'lookup', input_schema: { type: 'object' } },
];

describe('POST /messages', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  let s: Space;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: { ...upstreamEnv(up), COHORT_PROVIDER_ANTHROPIC_API_KEY: 'sk-ant-shared-000000' },
    });
    s = await space(gw, 'messages');
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('non-streaming: text, thinking and a tool_use block, Anthropic usage with cost', async () => {
    const res = await s.messages({
      model: 'local/scripted',
      max_tokens: 50,
      tools,
      messages: [user('/think hmm\n/say hi there\n/tool lookup {"q":"x"}')],
    });
    assert.equal(res.status, 200);
    const { id, ...rest } = res.body;
    assert.match(id, /^msg_gen-/);
    assert.deepEqual(rest, {
      type: 'message',
      role: 'assistant',
      model: 'local/scripted',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: '' },
        { type: 'text', text: 'hi there' },
        { type: 'tool_use', id: rest.content[2].id, name: 'lookup', input: { q: 'x' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 8,
        output_tokens: 4,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
        cost: 0.000016,
        is_byok: false,
      },
    });
  });

  test('streaming: message_start, blocks for thinking, text and tool input, message_delta, message_stop', async () => {
    const res = await s.messages({
      model: 'local/scripted',
      stream: true,
      max_tokens: 50,
      tools,
      messages: [user('/think a\n/say b c\n/shell ls')],
    });
    assert.equal(res.status, 200);
    const evs = anthropicFrames(res.body);
    assert.deepEqual(
      evs.map(([t, d]) =>
        d.delta?.type ? `${t}:${d.delta.type ?? ''}` : d.content_block ? `${t}:${d.content_block.type}` : t,
      ),
      [
        'message_start',
        'content_block_start:thinking',
        'content_block_delta:thinking_delta',
        'content_block_stop',
        'content_block_start:text',
        'content_block_delta:text_delta',
        'content_block_delta:text_delta',
        'content_block_stop',
        'content_block_start:tool_use',
        'content_block_delta:input_json_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual(evs[9]![1].delta, { type: 'input_json_delta', partial_json: '{"command":"ls"}' });
    assert.equal(evs[11]![1].delta.stop_reason, 'tool_use');
    assert.equal(evs[11]![1].usage.output_tokens, 4);
  });

  test('thinking and text alternating: the same blocks in the same order, streamed or not', async () => {
    const script = '/think a\n/say b\n/think c\n/think d\n/say e';
    const expected = [
      { type: 'thinking', thinking: 'a', signature: '' },
      { type: 'text', text: 'b' },
      { type: 'thinking', thinking: '\nc\nd', signature: '' },
      { type: 'text', text: '\ne' },
    ];
    const whole = await s.messages({ model: 'local/scripted', max_tokens: 50, messages: [user(script)] });
    assert.deepEqual(whole.body.content, expected);
    const streamed = await s.messages({
      model: 'local/scripted',
      stream: true,
      max_tokens: 50,
      messages: [user(script)],
    });
    const blocks: any[] = [];
    for (const [t, d] of anthropicFrames(streamed.body)) {
      if (t === 'content_block_start') blocks.push({ ...d.content_block });
      if (t === 'content_block_delta' && d.delta.type === 'thinking_delta') blocks.at(-1).thinking += d.delta.thinking;
      if (t === 'content_block_delta' && d.delta.type === 'text_delta') blocks.at(-1).text += d.delta.text;
    }
    assert.deepEqual(blocks, expected);
  });

  test('an OpenAI-style provider that sends no usage: message_delta still carries usage with cost and is_byok', async () => {
    const t = await space(gw, 'messages-no-usage');
    await t.credential({ key: 'sk-messages-no-usage' });
    up.misbehave('sk-messages-no-usage', 'no-usage');
    const res = await t.messages({ model: 'openai/gpt-4o', stream: true, max_tokens: 5, messages: [user('/say hi')] });
    up.misbehave('sk-messages-no-usage', null);
    const evs = anthropicFrames(res.body);
    assert.deepEqual(evs.slice(-2), [
      [
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: {
            input_tokens: 0,
            output_tokens: 0,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0,
            cost: 0,
            is_byok: true,
          },
        },
      ],
      ['message_stop', { type: 'message_stop' }],
    ]);
    const [row] = await t.log();
    assert.deepEqual([row!.status, row!.totalTokens, row!.cost], [200, 0, 0]);
  });

  test('a tool result continues the script; a failure before output is our error, after it an error event', async () => {
    const first = await s.messages({
      model: 'local/scripted',
      max_tokens: 50,
      tools,
      messages: [user('/shell pwd\n/say after')],
    });
    const use = first.body.content[0];
    const next = await s.messages({
      model: 'local/scripted',
      max_tokens: 50,
      tools,
      messages: [
        user('/shell pwd\n/say after'),
        { role: 'assistant', content: first.body.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '/home' }] },
      ],
    });
    assert.deepEqual(next.body.content, [{ type: 'text', text: 'shell: /home\nafter' }]);
    const failed = await s.messages({
      model: 'local/scripted',
      stream: true,
      max_tokens: 5,
      messages: [user('/fail 503')],
    });
    assert.equal(failed.status, 502);
    assert.deepEqual(failed.body.error.metadata, { reason: 'turn_failed', retryable: true });
    const bad = await s.messages({
      model: 'local/scripted',
      max_tokens: 5,
      messages: [{ role: 'system', content: 'x' }],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /messages\.0\.role/);
  });

  test('the anthropic provider: the request is converted, the key sent as x-api-key, the answer converted back', async () => {
    const from = up.received.length;
    const res = await s.messages({
      model: 'anthropic/claude-sonnet-4',
      system: 'Be kind.',
      max_tokens: 64,
      stream: true,
      messages: [user('/say routed')],
    });
    const sent = up.received[from]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.key, 'sk-ant-shared-000000');
    assert.deepEqual(sent.body, {
      model: 'claude-sonnet-4',
      max_tokens: 64,
      messages: [{ role: 'user', content: [{ type: 'text', text: '/say routed' }] }],
      stream: true,
      system: 'Be kind.',
    });
    const evs = anthropicFrames(res.body);
    assert.equal(
      evs
        .filter(([t]) => t === 'content_block_delta')
        .map(([, d]) => d.delta.text)
        .join(''),
      'routed',
    );
    const chat = await s.chat({ model: 'anthropic/claude-sonnet-4', messages: [user('/say via chat')] });
    assert.equal(chat.body.choices[0].message.content, 'via chat');
    assert.equal(chat.body.model, 'anthropic/claude-sonnet-4');
  });

  test('a client that disconnects mid-stream aborts the upstream request (anthropic provider)', async () => {
    const from = up.received.length;
    const logged = (await s.log()).length;
    const ctl = new AbortController();
    const res = await fetch(`${gw.url}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': s.key, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'anthropic/claude-sonnet-4',
        max_tokens: 64,
        stream: true,
        messages: [user('/say first\n/sleep 5000\n/say never')],
      }),
      signal: ctl.signal,
    });
    assert.equal(res.status, 200);
    await res.body!.getReader().read();
    ctl.abort();
    await waitFor('the upstream request is aborted', () => up.received[from]!.aborted);
    assert.equal(up.received[from]!.aborted, true);
    await waitFor('the request is logged', async () => (await s.log()).length > logged);
    const row = (await s.log())[logged]!;
    assert.deepEqual(
      [row.status, row.apiStyle, row.model, row.streamed],
      [499, 'messages', 'anthropic/claude-sonnet-4', true],
    );
  });

  test('the @anthropic-ai/sdk client works unchanged (x-api-key), streaming and not', async () => {
    const client = new Anthropic({ apiKey: s.key, baseURL: gw.url.replace(/\/v1$/, ''), maxRetries: 0 });
    const m = await client.messages.create({
      model: 'local/scripted',
      max_tokens: 20,
      messages: [{ role: 'user', content: '/say from sdk' }],
    });
    assert.deepEqual(m.content, [{ type: 'text', text: 'from sdk' }]);
    const stream = client.messages.stream({
      model: 'local/scripted',
      max_tokens: 20,
      messages: [{ role: 'user', content: '/think t\n/say streamed words' }],
    });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const final = await stream.finalMessage();
    assert.equal(texts.join(''), 'streamed words');
    assert.equal(final.content.length, 2);
    assert.equal(final.stop_reason, 'end_turn');
    await assert.rejects(
      client.messages.create({ model: 'local/nope', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (e: InstanceType<typeof Anthropic.APIError>) => e.status === 404,
    );
  });
});
