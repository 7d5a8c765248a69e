import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REASONS_TABLE, REFUSALS, retryableFor, type RefusalKind } from './refusals.ts';

test("each daemon refusal is a status its reason is refused with, and retryable as that reason's rule says", () => {
  const rows = (Object.keys(REFUSALS) as RefusalKind[]).map((kind) => {
    const r = REFUSALS[kind];
    return [kind, r.reason === null || REASONS_TABLE[r.reason].statuses.includes(r.status), r.retryable];
  });
  assert.deepEqual(rows, [
    ['bad_request', true, false],
    ['answer_rejected', true, false],
    ['unauthorized', true, false],
    ['run_not_found', true, false],
    ['interaction_unknown', true, false],
    ['intern_not_ready', true, true],
    ['busy', true, true],
    ['interaction_not_pending', true, false],
    ['already_attached', true, false],
    ['replay_lost', true, false],
    ['payload_too_large', true, false],
    ['intern_unreachable', true, true],
    ['intern_rejected', true, false],
    ['paused_capacity', true, true],
  ]);
});

test('retryable: fixed per reason, but turn_failed carries its classification', () => {
  assert.deepEqual(
    [
      retryableFor('busy'),
      retryableFor('bad_request', true),
      retryableFor('turn_failed'),
      retryableFor('turn_failed', true),
    ],
    [true, false, false, true],
  );
});
