// The console's pure parts under node's test runner: a turn built from chunks (text, reasoning, a pause, an error, usage), a refusal's message split
// by field, a question's answer typed by its fields, the usage series, and the stream transport
// against a scripted fetch (a 202 steer, a refusal, a cut connection, a silent one, keepalives).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { answerBody, applyChunk, streamChat, type Chunk, type Turn } from './chat.ts';
import { ApiProblem, fieldErrors } from './api.ts';
import { content } from './screens/interaction.tsx';
import { axis, series } from './screens/usage.tsx';

const turn = (): Turn => ({
  id: 't',
  prompt: 'p',
  mode: 'manual',
  parts: [],
  status: 'streaming',
  last: answerBody('s', { index: 0, id: 'c', type: 'function', function: { name: 'n', arguments: '{}' } }, 'x'),
  rev: 0,
});
const delta = (
  d: Chunk['choices'][0]['delta'],
  finish: Chunk['choices'][0]['finish_reason'] = null,
  model = 'local/scripted',
): Chunk => ({
  model,
  choices: [{ delta: d, finish_reason: finish }],
});

test('a turn gathers text and reasoning in order, pauses on a tool call, keeps the final usage', () => {
  const t = turn();
  const call = {
    index: 0,
    id: 'call_1',
    type: 'function' as const,
    function: {
      name: 'service.provide_input' as const,
      arguments: JSON.stringify({
        kind: 'permission',
        operation: 'shell',
        options: ['allow_once'],
        title: 'Run in the sandbox: ls',
        input: { command: 'ls' },
        sandbox: 'inner',
      }),
    },
  };
  for (const c of [
    delta({}, null, 'service/intern'),
    delta({ reasoning: 'hm' }),
    delta({ reasoning: 'm' }),
    delta({ content: 'a' }),
    delta({ content: 'b' }),
    delta({ tool_calls: [call] }),
    delta({}, 'tool_calls'),
  ])
    applyChunk(t, c);
  applyChunk(t, { model: 'service/intern', choices: [], session_id: 's', usage: null });
  assert.equal(t.status, 'paused');
  assert.equal(t.model, 'local/scripted', 'the API’s own model name does not replace the intern’s');
  assert.equal(t.usage, null);
  assert.deepEqual(t.parts.slice(0, 2), [
    { type: 'reasoning', text: 'hmm' },
    { type: 'text', text: 'ab' },
  ]);
  assert.deepEqual(t.parts[2], { type: 'interaction', call, args: JSON.parse(call.function.arguments) });
  assert.equal(t.rev, 8);
});

test('an error chunk fails the turn with the server’s reason and retryability', () => {
  const t = turn();
  applyChunk(t, {
    ...delta({}, 'error', 'service/intern'),
    error: { code: 502, message: 'the intern went away', metadata: { reason: 'stream_severed', retryable: true } },
  });
  applyChunk(t, {
    model: 'service/intern',
    choices: [],
    session_id: null,
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5 },
  });
  assert.equal(t.status, 'failed');
  assert.deepEqual(t.parts, [
    {
      type: 'error',
      problem: { status: 502, message: 'the intern went away', reason: 'stream_severed', retryable: true, fields: {} },
    },
  ]);
  assert.deepEqual(t.usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5 });
});

test('a 400 message is split by the field each part names', () => {
  assert.deepEqual(
    fieldErrors(
      'invalid request parameters: name: Too small: expected string to have >=1 characters; slug: must be lowercase; messages.0.content: bad; body: malformed JSON',
    ),
    {
      name: 'Too small: expected string to have >=1 characters',
      slug: 'must be lowercase',
      messages: 'bad',
    },
  );
  assert.deepEqual(
    fieldErrors(
      'invalid request parameters: workspace_id: the account’s default workspace was deleted, so workspace_id must be passed',
    ),
    { workspace_id: 'the account’s default workspace was deleted, so workspace_id must be passed' },
  );
  assert.deepEqual(fieldErrors('only management keys can perform this operation'), {});
});

test('a question’s answer is typed by its fields; empty optional fields are left out', () => {
  const fields = [
    { name: 'n', type: 'number', required: true, options: [] },
    { name: 'i', type: 'integer', required: false, options: [] },
    { name: 'b', type: 'boolean', required: false, options: [] },
    { name: 'c', type: 'string', required: true, options: ['red', 'blue'] },
    { name: 's', type: 'string', required: false, options: [] },
  ];
  assert.deepEqual(content(fields, { n: '2.5', i: '', c: 'blue', s: '' }), { n: 2.5, b: false, c: 'blue' });
});

test('usage: days oldest first, models by total, each day’s value per model', () => {
  const rows = [
    { date: '2026-11-24', model: 'a', requests: 1, prompt_tokens: 10, completion_tokens: 5, usage: 0.1 },
    { date: '2026-11-23', model: 'b', requests: 5, prompt_tokens: 1, completion_tokens: 1, usage: 0 },
    {
      date: '2026-11-24',
      model: 'b',
      requests: 2,
      prompt_tokens: 1,
      completion_tokens: 1,
      usage: 0,
      byok_usage_inference: 0.2,
    },
  ];
  assert.deepEqual(series(rows, 'requests'), {
    days: ['2026-11-23', '2026-11-24'],
    models: ['b', 'a'],
    values: [
      [5, 0],
      [2, 1],
    ],
  });
  assert.deepEqual(series(rows, 'cost').models, ['b', 'a']);
  assert.deepEqual(series(rows, 'tokens'), {
    days: ['2026-11-23', '2026-11-24'],
    models: ['a', 'b'],
    values: [
      [0, 2],
      [15, 2],
    ],
  });
});

/** A fetch that answers with the given status (after `headersAfterMs`) and, for 200, streams the given pieces with pauses. */
function scriptedFetch(status: number, pieces: (string | number)[] = [], body = '', headersAfterMs = 0) {
  globalThis.fetch = (async (_url: string, init: RequestInit) => {
    const signal = init.signal!;
    if (headersAfterMs)
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, headersAfterMs);
        signal.addEventListener('abort', () => {
          clearTimeout(t);
          reject(new DOMException('aborted', 'AbortError'));
        });
      });
    if (status !== 200)
      return new Response(body, { status, headers: { 'content-type': 'application/json', 'retry-after': '3' } });
    const enc = new TextEncoder();
    const stream = new ReadableStream({
      async start(c) {
        signal.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')));
        for (const p of pieces) {
          if (typeof p === 'number') await new Promise((r) => setTimeout(r, p));
          else if (!signal.aborted) c.enqueue(enc.encode(p));
        }
        if (!signal.aborted) c.close();
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  }) as typeof fetch;
  (globalThis as { sessionStorage?: unknown }).sessionStorage = { getItem: () => 'ck-test' };
}

const body = answerBody(
  's',
  { index: 0, id: 'c', type: 'function', function: { name: 'n', arguments: '{}' } },
  'allow_once',
);
const collect = () => {
  const chunks: Chunk[] = [];
  let reads = 0;
  return { chunks, reads: () => reads, on: { chunk: (c: Chunk) => chunks.push(c), read: () => reads++ } };
};
const problemOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiProblem);
    return e.problem;
  }
  assert.fail('resolved');
};

test('transport: a stream to [DONE], a steer, a refusal in the server’s words', async () => {
  const c = collect();
  const chunk = JSON.stringify(delta({ content: 'hi' }));
  scriptedFetch(200, [`data: ${chunk}\n\n`, 5, ': keepalive\n\n', 'data: [DONE]\n\n']);
  assert.equal(await streamChat('i', body, c.on), 'ended');
  assert.deepEqual(c.chunks, [JSON.parse(chunk)]);
  assert.equal(c.reads(), 3);
  scriptedFetch(202, [], JSON.stringify({ session_id: 's', status: 'steered' }));
  assert.equal(await streamChat('i', body, collect().on), 'steered');
  scriptedFetch(
    409,
    [],
    JSON.stringify({
      error: {
        code: 409,
        message: 'another turn is running on this intern',
        metadata: { reason: 'busy', retryable: true },
      },
    }),
  );
  assert.deepEqual(await problemOf(streamChat('i', body, collect().on)), {
    status: 409,
    message: 'another turn is running on this intern',
    reason: 'busy',
    retryable: true,
    retryAfter: 3,
    fields: {},
  });
});

test('transport: a connection cut before [DONE], or silent past the limit, is stream_severed and retryable', async () => {
  scriptedFetch(200, ['data: {"choices":[]}\n\n']);
  const cut = await problemOf(streamChat('i', body, collect().on));
  assert.deepEqual(
    [cut.reason, cut.retryable, cut.message],
    ['stream_severed', true, 'the connection to the gateway closed before the turn finished'],
  );
  // Keepalives every 30 ms keep a 100 ms limit from firing; then 300 ms of silence trips it.
  scriptedFetch(200, [30, ': keepalive\n\n', 30, ': keepalive\n\n', 30, ': keepalive\n\n', 300, 'data: [DONE]\n\n']);
  const limits = { silenceMs: 100, answerMs: 400 };
  const silent = await problemOf(streamChat('i', body, collect().on, undefined, limits));
  assert.deepEqual(
    [silent.reason, silent.retryable, silent.message],
    ['stream_severed', true, 'nothing came from the gateway for 0.1 seconds, not even a keepalive'],
  );
  // A held answer (no headers yet) is waited for up to its own limit, longer than the silence one.
  scriptedFetch(200, ['data: [DONE]\n\n'], '', 200);
  assert.equal(await streamChat('i', body, collect().on, undefined, limits), 'ended');
  scriptedFetch(200, ['data: [DONE]\n\n'], '', 600);
  const unanswered = await problemOf(streamChat('i', body, collect().on, undefined, limits));
  assert.deepEqual(
    [unanswered.reason, unanswered.message],
    ['stream_severed', 'nothing came from the gateway for 0.4 seconds, not even a keepalive'],
  );
});

test('usage axis: round ticks from 0 to at or above the highest value', () => {
  assert.deepEqual(axis(7), [0, 2, 4, 6, 8]);
  assert.deepEqual(axis(100), [0, 25, 50, 75, 100]);
  assert.deepEqual(axis(0.0123), [0, 0.005, 0.01, 0.015]);
  assert.deepEqual(axis(1), [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(axis(0), [0, 1]);
});

test('tool calls: a block per call id, changed in place by its later events, between the texts around it', () => {
  const t = turn();
  const base = { model: 'm', choices: [{ delta: {}, finish_reason: null }] };
  applyChunk(t, { model: 'm', choices: [{ delta: { content: 'let me look' }, finish_reason: null }] });
  const started = {
    id: 'c1',
    title: 'shell',
    kind: 'execute',
    status: 'in_progress',
    input: 'ls',
    output: null,
  } as const;
  applyChunk(t, { ...base, cohort_tool: started });
  applyChunk(t, {
    ...base,
    cohort_tool: { id: 'c1', title: null, kind: null, status: 'completed', input: null, output: 'a.txt' },
  });
  applyChunk(t, { model: 'm', choices: [{ delta: { content: 'found a.txt' }, finish_reason: null }] });
  assert.deepEqual(t.parts, [
    { type: 'text', text: 'let me look' },
    {
      type: 'tool',
      tool: { id: 'c1', title: 'shell', kind: 'execute', status: 'completed', input: 'ls', output: 'a.txt' },
    },
    { type: 'text', text: 'found a.txt' },
  ]);
});
