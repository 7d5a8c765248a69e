// How a refused model call is classified (SPEC §7 turn_failed: the intern's own classification).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failureOf } from './openai.ts';

const routeError = (code: number, message: string, retryable: boolean) =>
  JSON.stringify({ error: { code, message, metadata: { reason: 'turn_failed', retryable } } });

test('an endpoint that classifies its own failure is believed; otherwise the status decides', () => {
  const rows: [status: number, body: string, message: string, retryable: boolean][] = [
    [502, routeError(502, 'provider local: unexpected status 200: x', false), 'model endpoint answered 502: provider local: unexpected status 200: x', false],
    [502, routeError(502, 'provider p: overloaded', true), 'model endpoint answered 502: provider p: overloaded', true],
    [503, routeError(503, 'down for a moment', false), 'model endpoint answered 503: down for a moment', false],
    [400, routeError(400, 'bad', true), 'model endpoint answered 400: bad', true],
    [502, 'Bad Gateway', 'model endpoint answered 502: Bad Gateway', true],
    [500, JSON.stringify({ error: { message: 'oops' } }), 'model endpoint answered 500: oops', true],
    [429, JSON.stringify({ error: { message: 'slow down', metadata: { retryable: 'yes' } } }), 'model endpoint answered 429: slow down', true],
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
