// How a failed model call is classified (`turn_failed`'s retryable,
// docs/reference/intern-chat.md#statuses-and-reasons), refused outright or failing after its stream opened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { failureOf, streamChat, ModelCallError } from './openai.ts';

const routeError = (code: number, message: string, retryable: boolean) =>
  JSON.stringify({ error: { code, message, metadata: { reason: 'turn_failed', retryable } } });

test('an endpoint that classifies its own failure is believed; otherwise the status decides', () => {
  const rows: [status: number, body: string, message: string, retryable: boolean][] = [
    [
      502,
      routeError(502, 'provider local: unexpected status 200: x', false),
      'model endpoint answered 502: provider local: unexpected status 200: x',
      false,
    ],
    [502, routeError(502, 'provider p: overloaded', true), 'model endpoint answered 502: provider p: overloaded', true],
    [503, routeError(503, 'down for a moment', false), 'model endpoint answered 503: down for a moment', false],
    [400, routeError(400, 'bad', true), 'model endpoint answered 400: bad', true],
    [502, 'Bad Gateway', 'model endpoint answered 502: Bad Gateway', true],
    [500, JSON.stringify({ error: { message: 'oops' } }), 'model endpoint answered 500: oops', true],
    [
      429,
      JSON.stringify({ error: { message: 'slow down', metadata: { retryable: 'yes' } } }),
      'model endpoint answered 429: slow down',
      true,
    ],
    [408, '', 'model endpoint answered 408: ', true],
    [400, JSON.stringify({ error: { message: 'no such model' } }), 'model endpoint answered 400: no such model', false],
    [401, 'null', 'model endpoint answered 401: null', false],
    [404, JSON.stringify({ error: { message: 42 } }), 'model endpoint answered 404: {"error":{"message":42}}', false],
  ];
  for (const [status, body, message, retryable] of rows) {
    const e = failureOf(status, body);
    assert.deepEqual([e.message, e.status, e.retryable], [message, status, retryable], `${status} ${body}`);
  }
});

test('a long detail is cut to 300 characters', () => {
  assert.equal(failureOf(500, 'x'.repeat(1000)).message, `model endpoint answered 500: ${'x'.repeat(300)}`);
});

test('an error chunk after output fails the call with its classification; the text before it was handed out', async () => {
  const frames = (error: object) =>
    [
      {
        id: 'g',
        model: 'm/x',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'partial' }, finish_reason: null }],
      },
      { id: 'g', model: 'm/x', choices: [{ index: 0, delta: {}, finish_reason: 'error' }], error },
      { id: 'g', model: 'm/x', choices: [], usage: null },
    ]
      .map((c) => `data: ${JSON.stringify(c)}\n\n`)
      .join('') + 'data: [DONE]\n\n';
  let body = '';
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const rows: [error: object, message: string, status: number, retryable: boolean][] = [
      [
        { code: 502, message: 'provider p: connection reset', metadata: { reason: 'turn_failed', retryable: true } },
        'model stream failed (502): provider p: connection reset',
        502,
        true,
      ],
      [
        { code: 400, message: 'context too long', metadata: { reason: 'turn_failed', retryable: false } },
        'model stream failed (400): context too long',
        400,
        false,
      ],
      [{ message: 'overloaded' }, 'model stream failed (502): overloaded', 502, true],
    ];
    for (const [error, message, status, retryable] of rows) {
      body = frames(error);
      const said: string[] = [];
      const call = streamChat({
        baseUrl,
        apiKey: 'k',
        body: {},
        signal: new AbortController().signal,
        onContent: (t) => said.push(t),
        onReasoning: () => {},
      });
      await assert.rejects(call, (e: unknown) => {
        assert.ok(e instanceof ModelCallError);
        assert.deepEqual([e.message, e.status, e.retryable], [message, status, retryable]);
        return true;
      });
      assert.deepEqual(said, ['partial']);
    }
  } finally {
    server.close();
  }
});

test("a chunk's parts are read where they have their type and left out where not; a chunk that is no object is skipped", async () => {
  const chunks = [
    42,
    { model: 7, usage: 'lots', choices: 'none' },
    {
      model: 'm/x',
      choices: [{ delta: { content: 'a', reasoning: 5, reasoning_details: [{ type: 'reasoning.text' }] } }],
    },
    {
      choices: [
        { delta: { content: 'b', tool_calls: [{ index: 0, id: 'c1', function: { name: 'ls', arguments: '{}' } }] } },
      ],
    },
    {
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, completion_tokens_details: null },
    },
  ];
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const said: string[] = [];
    const r = await streamChat({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      body: {},
      signal: new AbortController().signal,
      onContent: (t) => said.push(t),
      onReasoning: (t) => said.push(`reasoning ${t}`),
    });
    assert.deepEqual(said.join(''), 'ab');
    assert.deepEqual(r, {
      message: {
        role: 'assistant',
        content: 'ab',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      },
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      model: 'm/x',
    });
  } finally {
    server.close();
  }
});
