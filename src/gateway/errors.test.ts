import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, REASONS, errorBody, retryableFor, type Reason } from './errors.ts';

// SPEC §7: always retryable for these; always false for reasons a retry cannot fix; turn_failed varies.
const TABLE: [Reason, boolean | 'varies'][] = [
  ['attachment_failed', false],
  ['bad_request', false],
  ['busy', true],
  ['client_closed_request', false],
  ['interaction_not_pending', false],
  ['interaction_unknown', false],
  ['intern_not_ready', true],
  ['intern_rejected', false],
  ['intern_unreachable', true],
  ['not_found', false],
  ['payload_too_large', false],
  ['rate_limited', true],
  ['run_ended', false],
  ['stream_severed', true],
  ['timeout', true],
  ['turn_failed', 'varies'],
];

test('the table covers every reason of SPEC §7', () => {
  assert.deepEqual(TABLE.map(([r]) => r), [...REASONS]);
});

for (const [reason, expected] of TABLE) {
  test(`retryable for ${reason}`, () => {
    if (expected === 'varies') {
      assert.equal(retryableFor(reason, true), true);
      assert.equal(retryableFor(reason, false), false);
      assert.equal(retryableFor(reason), false);
    } else {
      assert.equal(retryableFor(reason, !expected), expected, 'a classification cannot override a fixed rule');
    }
  });
}

test('errorBody renders metadata only where the route asks for it and the error has a reason', () => {
  const busy = new ApiError({ status: 409, reason: 'busy', message: 'another turn is running' });
  assert.deepEqual(errorBody(busy, { metadata: true }), { error: { code: 409, message: 'another turn is running', metadata: { reason: 'busy', retryable: true } } });
  assert.deepEqual(errorBody(busy, { metadata: false }), { error: { code: 409, message: 'another turn is running' } });
  const unauthorized = new ApiError({ status: 401, message: 'missing authentication header' });
  assert.deepEqual(errorBody(unauthorized, { metadata: true }), { error: { code: 401, message: 'missing authentication header' } });
});
