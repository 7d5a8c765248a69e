// tryRoutes over stub calls: a retryable failure moves on to the next route, a cancelled request
// does not; upstreamFailure's mapping of every provider status to ours.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tryRoutes, upstreamFailure, type Route } from './attempts.ts';
import { createSealer } from '../crypto/seal.ts';
import { createLogger } from '../../shared/log.ts';
import { ApiError } from '../errors.ts';
import { Cancel, UpstreamError, type ProviderAdapter, type UpstreamCall } from './types.ts';

const unused: ProviderAdapter = {
  stream: () => Promise.reject(new Error('unused')),
  complete: () => Promise.reject(new Error('unused')),
};

/** A model with one shared-capacity credential, `sk-<slug>`. */
function route(slug: string): Route {
  const provider = {
    slug,
    kind: 'openai' as const,
    baseUrl: `http://${slug}.test`,
    sharedKey: `sk-${slug}`,
    keyless: false,
    zdr: false,
    collectsData: false,
    configured: true,
    serves: new Map(),
  };
  return {
    model: `${slug}/m`,
    provider,
    providerModel: 'm',
    adapter: unused,
    candidates: [{ kind: 'shared' }],
    credentials: [],
  };
}

/** Tries models a and b; each call is answered by `answer`. */
function attempt(cancel: Cancel, answer: (call: UpstreamCall) => Promise<string>) {
  const stats = { attempts: 0 };
  const done = tryRoutes({
    routes: [route('a'), route('b')],
    body: { messages: [] },
    cancel,
    sealer: createSealer(randomBytes(32)),
    log: createLogger({ level: 'silent' }),
    run: (_adapter, call) => answer(call),
    stats,
  });
  return { done, stats };
}

const unavailable = () => new UpstreamError({ status: 503, message: 'unavailable' });

test('a retryable failure moves on to the next model, with the same cancellation', async () => {
  const cancel = new Cancel();
  const seen: [string | null, boolean][] = [];
  const { done, stats } = attempt(cancel, async (call) => {
    seen.push([call.apiKey, call.cancel === cancel]);
    if (call.apiKey === 'sk-a') throw unavailable();
    return 'ok';
  });
  const { served, ...rest } = await done;
  assert.equal(typeof served.startedAt, 'number');
  assert.deepEqual(
    { ...rest, served: { ...served, startedAt: 0 } },
    {
      value: 'ok',
      served: { model: 'b/m', provider: 'b', credentialId: null, isByok: false, attempts: 2, startedAt: 0 },
      apiKey: 'sk-b',
    },
  );
  assert.deepEqual(seen, [
    ['sk-a', true],
    ['sk-b', true],
  ]);
  assert.equal(stats.attempts, 2);
});

test('once cancelled, a failure is the client closing and no other model is tried', async () => {
  const cancel = new Cancel();
  const tried: (string | null)[] = [];
  const { done, stats } = attempt(cancel, async (call) => {
    tried.push(call.apiKey);
    cancel.cancel();
    throw unavailable();
  });
  await assert.rejects(done, (e) => e instanceof ApiError && e.status === 499 && e.reason === 'client_closed_request');
  assert.deepEqual(tried, ['sk-a']);
  assert.equal(stats.attempts, 1);
});

test("a failure quoting the key is scrubbed of the failing call's key, retryable or not", async () => {
  const quoting =
    (status: number) =>
    async (call: UpstreamCall): Promise<string> => {
      throw new UpstreamError({ status, message: `bad key ${call.apiKey}` });
    };
  await assert.rejects(
    attempt(new Cancel(), quoting(503)).done,
    (e) => e instanceof ApiError && e.status === 502 && e.message === 'provider b: bad key [REDACTED]',
  );
  await assert.rejects(
    attempt(new Cancel(), quoting(401)).done,
    (e) => e instanceof ApiError && e.status === 401 && e.message === 'provider a: bad key [REDACTED]',
  );
});

test('provider statuses map to ours: 400/422 are 400, 401/403/404 stay, anything else not retryable is a 502 naming it', () => {
  const cases: [number, string, [number, string, boolean, string]][] = [
    [400, 'bad', [400, 'bad_request', false, 'provider p: bad']],
    [422, 'bad', [400, 'bad_request', false, 'provider p: bad']],
    [401, 'no', [401, 'turn_failed', false, 'provider p: no']],
    [403, 'no', [403, 'turn_failed', false, 'provider p: no']],
    [404, '', [404, 'turn_failed', false, 'provider p: status 404']],
    [408, 'slow', [502, 'turn_failed', true, 'provider p: slow']],
    [503, '', [502, 'turn_failed', true, 'provider p: status 503']],
    [
      200,
      'scripted failure 200',
      [502, 'turn_failed', false, 'provider p: unexpected status 200: scripted failure 200'],
    ],
    [204, '', [502, 'turn_failed', false, 'provider p: unexpected status 204']],
    [402, 'pay', [502, 'turn_failed', false, 'provider p: unexpected status 402: pay']],
    [418, 'teapot', [502, 'turn_failed', false, 'provider p: unexpected status 418: teapot']],
    [
      301,
      '<html>moved</html>',
      [502, 'turn_failed', false, 'provider p: its base URL redirects (301); redirects are not followed'],
    ],
  ];
  for (const [status, message, expected] of cases) {
    const e = upstreamFailure('p', null, new UpstreamError({ status, message }));
    assert.deepEqual([e.status, e.reason, e.retryable, e.message], expected, String(status));
  }
});
