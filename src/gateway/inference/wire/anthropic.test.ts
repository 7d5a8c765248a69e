import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromMessagesBody } from './anthropic-request.ts';
import { anthropicErrorType, messagesEncoder, toMessage } from './anthropic-response.ts';
import { toAnthropicBody } from '../providers/anthropic/request.ts';
import { JSON_MODE_INSTRUCTION as JSON_MODE } from '../providers/options.ts';
import { anthropicChunker, fromAnthropicMessage } from '../providers/anthropic/response.ts';
import type { ChatChunk } from '../types.ts';

test('Anthropic request → chat request: system, tool results before text, tool uses, tools, choice, stops', () => {
  const chat = fromMessagesBody({
    model: 'a/b',
    max_tokens: 10,
    system: [
      { type: 'text', text: 'one' },
      { type: 'text', text: 'two' },
    ],
    messages: [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'ok' }] },
          { type: 'text', text: 'and?' },
        ],
      },
    ],
    tools: [{ name: 'f', description: 'd', input_schema: { type: 'object' } }, { type: 'service:web_search' }],
    tool_choice: { type: 'any' },
    stop_sequences: ['END'],
    metadata: { user_id: 'u1' },
  });
  assert.deepEqual(chat, {
    model: 'a/b',
    max_tokens: 10,
    messages: [
      { role: 'system', content: 'one\n\ntwo' },
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: 'calling',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      { role: 'tool', tool_call_id: 't1', content: 'ok' },
      { role: 'user', content: 'and?' },
    ],
    tools: [
      { type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' } } },
      { type: 'service:web_search' },
    ],
    tool_choice: 'required',
    stop: ['END'],
    user: 'u1',
  });
});

test('chat request → Anthropic body and back: roles merge, tool results are user blocks', () => {
  const body = toAnthropicBody(
    {
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"x":2}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'r1' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'more' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } },
          ],
        },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      stop: 'S',
      temperature: 0.1,
    },
    { model: 'claude-x', stream: false },
  );
  assert.deepEqual(body, {
    model: 'claude-x',
    max_tokens: 4096,
    stream: false,
    system: 'sys',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'q' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'f', input: { x: 2 } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c1', content: 'r1' },
          { type: 'text', text: 'more' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
        ],
      },
    ],
    tools: [{ name: 'f', description: undefined, input_schema: { type: 'object' } }],
    tool_choice: { type: 'tool', name: 'f' },
    temperature: 0.1,
    stop_sequences: ['S'],
  });
});

test('Anthropic message ↔ completion, stop reasons and cached usage', () => {
  const c = fromAnthropicMessage({
    id: 'msg_1',
    model: 'claude-x',
    content: [
      { type: 'thinking', thinking: 'hm' },
      { type: 'text', text: 'hi' },
      { type: 'tool_use', id: 't', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    usage: { input_tokens: 5, output_tokens: 3, cache_read_input_tokens: 2 },
  });
  assert.deepEqual(c.choices[0], {
    index: 0,
    message: {
      role: 'assistant',
      content: 'hi',
      reasoning: 'hm',
      tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    },
    finish_reason: 'tool_calls',
  });
  assert.deepEqual(c.usage, {
    prompt_tokens: 7,
    completion_tokens: 3,
    total_tokens: 10,
    prompt_tokens_details: { cached_tokens: 2 },
  });
  const m = toMessage(c);
  assert.equal(m.stop_reason, 'tool_use');
  assert.deepEqual(m.usage, {
    input_tokens: 5,
    output_tokens: 3,
    cache_read_input_tokens: 2,
    cache_creation_input_tokens: 0,
  });
  for (const [stop, finish] of [
    ['end_turn', 'stop'],
    ['max_tokens', 'length'],
    ['stop_sequence', 'stop'],
    ['refusal', 'content_filter'],
  ] as const) {
    assert.equal(
      fromAnthropicMessage({ id: 'm', model: 'x', content: [], stop_reason: stop, usage: {} }).choices[0]!
        .finish_reason,
      finish,
    );
  }
});

test('Anthropic events → chunks → Anthropic events round trip', () => {
  const next = anthropicChunker({ model: 'claude-x' });
  const events = [
    {
      type: 'message_start',
      message: { id: 'msg_9', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 4 } },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'tu', name: 'f' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } },
    { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 6 } },
    { type: 'message_stop' },
  ];
  const chunks = events.map(next).filter((c): c is ChatChunk => c !== null);
  assert.deepEqual(
    chunks.map((c) => c.choices[0]!.delta),
    [
      { role: 'assistant', content: '' },
      { content: 'Hel' },
      { content: 'lo' },
      { tool_calls: [{ index: 0, id: 'tu', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      {},
    ],
  );
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'tool_calls');
  assert.deepEqual(chunks.at(-1)!.usage, {
    prompt_tokens: 4,
    completion_tokens: 6,
    total_tokens: 10,
    prompt_tokens_details: { cached_tokens: 0 },
  });
  const enc = messagesEncoder({ model: 'claude-x' });
  const text = chunks.map((c) => enc.push(c)).join('') + enc.end();
  const types = text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => f.split('\n')[0]!.slice(7));
  assert.deepEqual(types, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  assert.throws(
    () => next({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } }),
    (e: { status: number }) => e.status === 529,
  );
});

test('our error statuses as Anthropic error types, one row per status', () => {
  const rows: [number, string][] = [
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [502, 'api_error'],
    [503, 'overloaded_error'],
    [504, 'api_error'],
    [529, 'overloaded_error'],
  ];
  assert.deepEqual(
    rows.map(([status]) => [status, anthropicErrorType(status)]),
    rows,
  );
});

test('a stream that fails after output closes its open block and ends with an error event of the right type', () => {
  const enc = messagesEncoder({ model: 'claude-x' });
  const chunk: ChatChunk = {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content: 'partial' }, finish_reason: null }],
  };
  const text = enc.push(chunk) + enc.error('provider openai: slow down', 429);
  const frames = text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => ({ event: f.split('\n')[0]!.slice(7), data: JSON.parse(f.split('\n')[1]!.slice(6)) }));
  assert.deepEqual(
    frames.map((f) => f.event),
    ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error'],
  );
  assert.deepEqual(frames.at(-1)!.data, {
    type: 'error',
    error: { type: 'rate_limit_error', message: 'provider openai: slow down' },
  });
});

test('structured output toward Anthropic: a schema as output_config.format, JSON mode as a system instruction', () => {
  const marked = {
    role: 'system' as const,
    content: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
  };
  const rows: [string, Record<string, unknown>, unknown, unknown][] = [
    ['json_object, no system', { response_format: { type: 'json_object' } }, JSON_MODE, undefined],
    [
      'json_object after the system prompt',
      { response_format: { type: 'json_object' }, messages: [{ role: 'system', content: 'sys' }] },
      `sys\n\n${JSON_MODE}`,
      undefined,
    ],
    [
      'json_object after a cached system block, which keeps its breakpoint',
      { response_format: { type: 'json_object' }, messages: [marked] },
      [
        { type: 'text', text: 'S', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: JSON_MODE },
      ],
      undefined,
    ],
    [
      'json_schema without a schema is JSON mode',
      { response_format: { type: 'json_schema', json_schema: { name: 'n' } } },
      JSON_MODE,
      undefined,
    ],
    [
      'json_schema with a schema',
      { response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object' } } } },
      undefined,
      { format: { type: 'json_schema', schema: { type: 'object' } } },
    ],
    ['text', { response_format: { type: 'text' } }, undefined, undefined],
  ];
  for (const [name, extra, system, output] of rows) {
    const { messages = [], ...rest } = extra as { messages?: never[] };
    const body = toAnthropicBody({ messages: [...messages, { role: 'user', content: 'q' }], ...rest } as never, {
      model: 'claude-x',
      stream: false,
    });
    assert.deepEqual([body.system, body.output_config], [system, output], name);
  }
});
