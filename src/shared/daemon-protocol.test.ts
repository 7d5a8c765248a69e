import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  REFUSALS,
  RefusalBody,
  RunEvent,
  TurnRequest,
  daemonPaths,
  endsStream,
  formatRunEvent,
  parseRunEvent,
  promptTooLong,
  refusalBody,
} from './daemon-protocol.ts';

test('turn request defaults to self-drive and bounds the prompt', () => {
  assert.deepEqual(TurnRequest.parse({ prompt: 'hi' }), { prompt: 'hi', approval_mode: 'self-drive' });
  assert.equal(TurnRequest.safeParse({ prompt: 'x'.repeat(32_001) }).success, false);
  assert.equal(TurnRequest.safeParse({ prompt: 'hi', session_id: '' }).success, false);
  assert.equal(TurnRequest.safeParse({ prompt: 'hi', approval_mode: 'auto' }).success, false);
});

test('the prompt limit counts characters, not UTF-16 units (the chat limits: 32000 characters)', () => {
  const rows: [string, boolean][] = [
    ['x'.repeat(32_000), false],
    ['x'.repeat(32_001), true],
    ['😀'.repeat(32_000), false],
    ['😀'.repeat(32_001), true],
    ['😀'.repeat(16_000) + 'x'.repeat(16_000), false],
  ];
  for (const [prompt, tooLong] of rows) {
    assert.equal(promptTooLong(prompt), tooLong, `${prompt.length} units`);
    assert.equal(TurnRequest.safeParse({ prompt }).success, !tooLong);
  }
});

test('refusal bodies carry the documented reason and retryable, except 401', () => {
  assert.deepEqual(refusalBody('busy', 'another turn runs'), {
    error: { code: 409, message: 'another turn runs', metadata: { reason: 'busy', retryable: true } },
  });
  assert.deepEqual(refusalBody('replay_lost', 'gone'), {
    error: { code: 410, message: 'gone', metadata: { reason: 'attachment_failed', retryable: false } },
  });
  assert.deepEqual(refusalBody('unauthorized', 'no'), { error: { code: 401, message: 'no' } });
  for (const kind of Object.keys(REFUSALS) as (keyof typeof REFUSALS)[]) {
    assert.equal(RefusalBody.safeParse(refusalBody(kind, 'm')).success, true, kind);
  }
});

test('events round-trip through SSE framing', () => {
  const e: RunEvent = {
    seq: 3,
    type: 'interaction',
    interaction_id: 'int_1',
    interaction: {
      kind: 'permission',
      operation: 'shell',
      options: ['allow_once', 'reject_once'],
      title: 'Run in the sandbox: ls',
      input: { command: 'ls' },
      sandbox: 'inner',
    },
    deadline_at: '2026-01-01T00:00:00.000Z',
  };
  const framed = formatRunEvent(e);
  assert.equal(framed.split('\n')[0], 'id: 3');
  assert.deepEqual(parseRunEvent(framed.split('\n')[1]!.slice('data: '.length)), e);
  assert.equal(endsStream(e), true);
  assert.equal(endsStream({ type: 'text' }), false);
  assert.throws(() => parseRunEvent('{"seq":0,"type":"text","text":"x"}'));
});

test('paths encode their parameters', () => {
  assert.equal(daemonPaths.answer('a/b', 'c'), '/v1/sessions/a%2Fb/interactions/c');
  assert.equal(daemonPaths.events('r1', 4), '/v1/runs/r1/events?after=4');
});

test('parseRunEvent answers exactly as the RunEvent schema does, fast path or not', () => {
  const schemaAnswer = (data: string) => {
    try {
      return { ok: RunEvent.parse(JSON.parse(data)) };
    } catch {
      return { err: true };
    }
  };
  const ours = (data: string) => {
    try {
      return { ok: parseRunEvent(data) };
    } catch {
      return { err: true };
    }
  };
  const value = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.constant(null),
    fc.boolean(),
    fc.constant(2 ** 53),
    fc.constant(-1),
    fc.constant(0),
    fc.constant(1.5),
  );
  const event = fc.record(
    {
      type: fc.oneof(fc.constantFrom('text', 'reasoning', 'model', 'run', 'TEXT'), value),
      text: value,
      seq: fc.oneof(fc.nat(), value),
      model: value,
      extra: value,
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(
      fc.oneof(
        event.map((e) => JSON.stringify(e)),
        fc.constantFrom('null', '[]', '"text"', '{"type":"text","text":"x","seq":1}'),
      ),
      (data) => {
        assert.deepEqual(ours(data), schemaAnswer(data));
      },
    ),
    { numRuns: 3000 },
  );
});
