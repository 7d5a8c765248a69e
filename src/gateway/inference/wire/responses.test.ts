import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromResponsesBody, type ResponsesBody } from './responses-request.ts';
import { echoOf, responsesEncoder, responsesUsage, toResponse, type ResponseIdentity } from './responses-response.ts';
import { PARTS, type ChatChunk, type Completion } from '../types.ts';
import { responseFrames } from '../../../../test/helpers/inference-fixtures.ts';

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

test('Responses request → chat request, case by case', () => {
  const cases: [string, ResponsesBody, Record<string, unknown>][] = [
    [
      'a string input is one user message',
      { model: 'a/b', input: 'hi' },
      { model: 'a/b', messages: [{ role: 'user', content: 'hi' }] },
    ],
    [
      'instructions lead as the system message; text parts join; system and developer items stay',
      {
        input: [
          { role: 'developer', content: [{ type: 'input_text', text: 'dev' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'a' },
              { type: 'input_text', text: 'b' },
            ],
          },
        ],
        instructions: 'Be brief.',
      },
      {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: 'dev' },
          { role: 'user', content: 'ab' },
        ],
      },
    ],
    [
      'a user image makes chat content parts',
      {
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'see' },
              { type: 'input_image', image_url: 'data:image/png;base64,AA', detail: 'low' },
            ],
          },
        ],
      },
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'see' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AA', detail: 'low' } },
            ],
          },
        ],
      },
    ],
    [
      'output text and function calls fold into one assistant message; outputs become tool messages; reasoning is dropped',
      {
        input: [
          { role: 'user', content: 'go' },
          { type: 'reasoning', summary: [] } as never,
          {
            type: 'message',
            role: 'assistant',
            content: [
              { type: 'output_text', text: 'calling' },
              { type: 'refusal', refusal: '!' },
            ],
          },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' },
          { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'one' },
          {
            type: 'function_call_output',
            call_id: 'c2',
            output: [
              { type: 'input_text', text: 't' },
              { type: 'input_text', text: 'wo' },
            ],
          },
          { type: 'function_call', call_id: 'c3', name: 'f', arguments: '{}' },
        ],
      },
      {
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: 'calling!', tool_calls: [call('c1', 'f', '{"a":1}'), call('c2', 'g', '{}')] },
          { role: 'tool', tool_call_id: 'c1', content: 'one' },
          { role: 'tool', tool_call_id: 'c2', content: 'two' },
          { role: 'assistant', content: null, tool_calls: [call('c3', 'f', '{}')] },
        ],
      },
    ],
    [
      'tools, tool choice, output cap, reasoning effort, JSON schema format, verbosity',
      {
        input: 'x',
        tools: [
          { type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true },
          { type: 'function', name: 'g', parameters: null },
          { type: 'service:web_search' },
          { type: 'web_search' },
          { type: 'namespace', name: 'mcp' },
        ],
        tool_choice: { type: 'function', name: 'f' },
        max_output_tokens: 64,
        reasoning: { effort: 'low' },
        text: {
          format: { type: 'json_schema', name: 's', schema: { type: 'object' }, strict: true },
          verbosity: 'low',
        },
      },
      {
        messages: [{ role: 'user', content: 'x' }],
        tools: [
          { type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true } },
          { type: 'function', function: { name: 'g' } },
          { type: 'service:web_search' },
        ],
        tool_choice: { type: 'function', function: { name: 'f' } },
        max_tokens: 64,
        reasoning: { effort: 'low' },
        response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' }, strict: true } },
        verbosity: 'low',
      },
    ],
    [
      'json_object and text formats; string tool choice',
      { input: 'x', text: { format: { type: 'json_object' } }, tool_choice: 'required' },
      { messages: [{ role: 'user', content: 'x' }], tool_choice: 'required', response_format: { type: 'json_object' } },
    ],
    [
      'nulls are "not set" (a preset fills them); storage fields are dropped; routing and other fields pass',
      {
        input: 'x',
        temperature: null,
        instructions: null,
        max_output_tokens: null,
        store: false,
        include: ['reasoning.encrypted_content'],
        previous_response_id: null,
        preset: 'p',
        top_p: 0.5,
        parallel_tool_calls: false,
        prompt_cache_key: 'k',
        text: { format: { type: 'text' } },
      },
      {
        preset: 'p',
        top_p: 0.5,
        parallel_tool_calls: false,
        prompt_cache_key: 'k',
        messages: [{ role: 'user', content: 'x' }],
      },
    ],
  ];
  for (const [name, body, expected] of cases) assert.deepEqual(fromResponsesBody(body), expected, name);
});

const who = (echo = echoOf({})): ResponseIdentity => ({ requestId: 'gen-1', model: 'p/m', createdAt: 100, echo });
const usage = {
  prompt_tokens: 5,
  completion_tokens: 3,
  total_tokens: 8,
  prompt_tokens_details: { cached_tokens: 2 },
  completion_tokens_details: { reasoning_tokens: 1 },
  cost: 0.5,
  is_byok: true,
};

test('chat usage → Responses usage', () => {
  assert.deepEqual(responsesUsage(usage), {
    input_tokens: 5,
    input_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
    output_tokens: 3,
    output_tokens_details: { reasoning_tokens: 1 },
    total_tokens: 8,
    cost: 0.5,
    is_byok: true,
  });
  assert.deepEqual(responsesUsage(null), {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  });
});

test('echoOf: the request fields a response repeats, with their defaults', () => {
  assert.deepEqual(
    echoOf({
      input: 'x',
      instructions: 'i',
      temperature: 0.2,
      tools: [{ type: 'function', name: 'f' }],
      metadata: { a: 'b' },
      user: 'u',
    }),
    {
      instructions: 'i',
      max_output_tokens: null,
      metadata: { a: 'b' },
      parallel_tool_calls: true,
      reasoning: null,
      temperature: 0.2,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [{ type: 'function', name: 'f' }],
      top_p: null,
      user: 'u',
    },
  );
});

const completion = (
  message: Completion['choices'][number]['message'],
  finish: Completion['choices'][number]['finish_reason'],
): Completion => ({
  id: 'gen-1',
  object: 'chat.completion',
  created: 1,
  model: 'p/m',
  choices: [{ index: 0, message, finish_reason: finish }],
  usage,
});

test('completion → response: items in the order produced, status by finish reason', () => {
  const cases: [
    string,
    Completion,
    { status: string; incomplete_details: unknown; output: unknown[]; output_text: string },
  ][] = [
    [
      'parts in order, then the calls',
      completion(
        {
          role: 'assistant',
          content: 'ab',
          reasoning: 'rr',
          tool_calls: [call('c1', 'f', '{}')],
          [PARTS]: [
            { kind: 'text', text: 'a' },
            { kind: 'thinking', text: 'rr' },
            { kind: 'text', text: 'b' },
          ],
        },
        'tool_calls',
      ),
      {
        status: 'completed',
        incomplete_details: null,
        output: [
          {
            id: 'msg_gen-1_0',
            type: 'message',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'a', annotations: [], logprobs: [] }],
          },
          { id: 'rs_gen-1_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'rr' }] },
          {
            id: 'msg_gen-1_2',
            type: 'message',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'b', annotations: [], logprobs: [] }],
          },
          { id: 'fc_gen-1_3', type: 'function_call', status: 'completed', call_id: 'c1', name: 'f', arguments: '{}' },
        ],
        output_text: 'ab',
      },
    ],
    [
      'without parts: reasoning first; cut short by the output cap',
      completion({ role: 'assistant', content: 'x', reasoning: 'r' }, 'length'),
      {
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        output: [
          { id: 'rs_gen-1_0', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'r' }] },
          {
            id: 'msg_gen-1_1',
            type: 'message',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'x', annotations: [], logprobs: [] }],
          },
        ],
        output_text: 'x',
      },
    ],
    [
      'filtered, no content',
      completion({ role: 'assistant', content: null }, 'content_filter'),
      { status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [], output_text: '' },
    ],
  ];
  for (const [name, c, expected] of cases) {
    const r = toResponse(c, who());
    assert.deepEqual(
      { status: r.status, incomplete_details: r.incomplete_details, output: r.output, output_text: r.output_text },
      expected,
      name,
    );
    assert.deepEqual(
      [r.id, r.object, r.created_at, r.model, r.store, r.error, r.usage],
      ['resp_gen-1', 'response', 100, 'p/m', false, null, responsesUsage(usage)],
      name,
    );
  }
});

const chunk = (
  delta: ChatChunk['choices'][number]['delta'],
  finish: ChatChunk['choices'][number]['finish_reason'] = null,
): ChatChunk => ({
  id: 'x',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const usageChunk: ChatChunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage };

/** One line per event: its type and the fields that locate and carry it. */
const summary = ([t, d]: [string, any]) =>
  [t, d.output_index ?? null, d.delta ?? d.text ?? d.arguments ?? d.item?.type ?? d.response?.status ?? null].join(' ');

test('chunks → events: reasoning, text, split and parallel tool-call arguments, completed with usage', () => {
  const e = responsesEncoder(who());
  const text = [
    e.start(),
    e.push(chunk({ role: 'assistant', content: '' })),
    e.push(chunk({ reasoning: 'r1' })),
    e.push(chunk({ reasoning: ' r2' })),
    e.push(chunk({ content: 'a' })),
    e.push(chunk({ content: ' b' })),
    e.push(
      chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{"q"' } }] }),
    ),
    e.push(chunk({ tool_calls: [{ index: 1, id: 'c2', type: 'function', function: { name: 'g', arguments: '' } }] })),
    e.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] })),
    e.push(chunk({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] })),
    e.push(chunk({}, 'tool_calls')),
    e.push(usageChunk),
    e.end(),
  ].join('');
  const evs = responseFrames(text);
  assert.deepEqual(evs.map(summary), [
    'response.created  in_progress',
    'response.in_progress  in_progress',
    'response.output_item.added 0 reasoning',
    'response.content_part.added 0 ',
    'response.reasoning_text.delta 0 r1',
    'response.reasoning_text.delta 0  r2',
    'response.reasoning_text.done 0 r1 r2',
    'response.content_part.done 0 ',
    'response.output_item.done 0 reasoning',
    'response.output_item.added 1 message',
    'response.content_part.added 1 ',
    'response.output_text.delta 1 a',
    'response.output_text.delta 1  b',
    'response.output_text.done 1 a b',
    'response.content_part.done 1 ',
    'response.output_item.done 1 message',
    'response.output_item.added 2 function_call',
    'response.function_call_arguments.delta 2 {"q"',
    'response.output_item.added 3 function_call',
    'response.function_call_arguments.delta 2 :1}',
    'response.function_call_arguments.delta 3 {}',
    'response.function_call_arguments.done 2 {"q":1}',
    'response.output_item.done 2 function_call',
    'response.function_call_arguments.done 3 {}',
    'response.output_item.done 3 function_call',
    'response.completed  completed',
  ]);
  const done = evs.at(-1)![1].response;
  assert.deepEqual(done.output, [
    { id: 'rs_gen-1_0', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'r1 r2' }] },
    {
      id: 'msg_gen-1_1',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'a b', annotations: [], logprobs: [] }],
    },
    { id: 'fc_gen-1_2', type: 'function_call', status: 'completed', call_id: 'c1', name: 'f', arguments: '{"q":1}' },
    { id: 'fc_gen-1_3', type: 'function_call', status: 'completed', call_id: 'c2', name: 'g', arguments: '{}' },
  ]);
  assert.deepEqual([done.output_text, done.usage, evs[0]![1].response.usage], ['a b', responsesUsage(usage), null]);
  assert.deepEqual(evs[3]![1].part, { type: 'reasoning_text', text: '' });
  assert.deepEqual(evs[10]![1].part, { type: 'output_text', text: '', annotations: [], logprobs: [] });
  assert.deepEqual(evs[11]![1], {
    type: 'response.output_text.delta',
    item_id: 'msg_gen-1_1',
    output_index: 1,
    content_index: 0,
    delta: 'a',
    logprobs: [],
    sequence_number: 11,
  });
});

test('reasoning.summary asked for: the reasoning as a summary_text part, with the reasoning_summary events', () => {
  const asked = who(echoOf({ reasoning: { effort: 'low', summary: 'auto' } }));
  const e = responsesEncoder(asked);
  const evs = responseFrames(
    [
      e.start(),
      e.push(chunk({ reasoning: 's1' })),
      e.push(chunk({ reasoning: ' s2' })),
      e.push(chunk({ content: 'a' }, 'stop')),
      e.end(),
    ].join(''),
  );
  assert.deepEqual(evs.map(summary).slice(2, 9), [
    'response.output_item.added 0 reasoning',
    'response.reasoning_summary_part.added 0 ',
    'response.reasoning_summary_text.delta 0 s1',
    'response.reasoning_summary_text.delta 0  s2',
    'response.reasoning_summary_text.done 0 s1 s2',
    'response.reasoning_summary_part.done 0 ',
    'response.output_item.done 0 reasoning',
  ]);
  assert.deepEqual(evs[4]![1], {
    type: 'response.reasoning_summary_text.delta',
    item_id: 'rs_gen-1_0',
    output_index: 0,
    summary_index: 0,
    delta: 's1',
    sequence_number: 4,
  });
  const item = { id: 'rs_gen-1_0', type: 'reasoning', summary: [{ type: 'summary_text', text: 's1 s2' }], content: [] };
  assert.deepEqual(evs.at(-1)![1].response.output[0], item);
  const completion = {
    id: 'x',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'a', reasoning: 's1 s2' }, finish_reason: 'stop' }],
  } as never;
  assert.deepEqual(toResponse(completion, asked).output[0], item);
});

test('a finish by the output cap ends with response.incomplete; a failure with response.failed, open items incomplete', () => {
  const cut = responsesEncoder(who());
  const incomplete = responseFrames(cut.start() + cut.push(chunk({ content: 'a' }, 'length')) + cut.end());
  assert.deepEqual(incomplete.at(-1)![1].response.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(incomplete.at(-1)![0], 'response.incomplete');

  const failing = responsesEncoder(who());
  const evs = responseFrames(
    failing.start() +
      failing.push(chunk({ content: 'part' })) +
      failing.error({ status: 504, message: 'too slow', reason: 'timeout', retryable: true }),
  );
  const [type, data] = evs.at(-1)!;
  assert.equal(type, 'response.failed');
  assert.deepEqual(
    [data.response.status, data.response.error, data.response.completed_at],
    ['failed', { code: 'server_error', message: 'too slow', metadata: { reason: 'timeout', retryable: true } }, null],
  );
  assert.deepEqual(data.response.output, [
    {
      id: 'msg_gen-1_0',
      type: 'message',
      status: 'incomplete',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'part', annotations: [], logprobs: [] }],
    },
  ]);
  const limited = responsesEncoder(who());
  const last = responseFrames(
    limited.start() + limited.error({ status: 429, message: 'slow down', retryable: true }),
  ).at(-1)![1];
  assert.deepEqual(last.response.error, { code: 'rate_limit_exceeded', message: 'slow down' });
});
