import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError, REASONS, REASONS_TABLE, errorBody, retryableFor, type Reason } from './errors.ts';

// docs/reference/intern-chat.md#statuses-and-reasons: always retryable for these; always false for reasons
// a retry cannot fix; turn_failed varies.
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

test('the table covers every reason', () => {
  assert.deepEqual(
    TABLE.map(([r]) => r),
    [...REASONS],
  );
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
  assert.deepEqual(errorBody(busy, { metadata: true }), {
    error: { code: 409, message: 'another turn is running', metadata: { reason: 'busy', retryable: true } },
  });
  assert.deepEqual(errorBody(busy, { metadata: false }), { error: { code: 409, message: 'another turn is running' } });
  const unauthorized = new ApiError({ status: 401, message: 'missing authentication header' });
  assert.deepEqual(errorBody(unauthorized, { metadata: true }), {
    error: { code: 401, message: 'missing authentication header' },
  });
});

test("the reference (docs/reference/errors.md) lists every reason with the registry's statuses, stream use and retry rule", () => {
  const doc = readFileSync(new URL('../../docs/reference/errors.md', import.meta.url), 'utf8');
  for (const reason of REASONS) {
    const row = new RegExp(`^\\| \`${reason}\` \\| ([^|]+) \\| (yes|no) \\| ([^|]+) \\|$`, 'm').exec(doc);
    assert.ok(row, `${reason} has a row`);
    const { statuses, inStream, retryable } = REASONS_TABLE[reason];
    assert.equal(row[1]!.trim(), statuses.join(', '), reason);
    assert.equal(row[2] === 'yes', inStream, reason);
    assert.ok(row[3]!.trim().startsWith(retryable), reason);
  }
});

test('nothing outside the registry constructs an ApiError', () => {
  const src = fileURLToPath(new URL('../', import.meta.url));
  const files = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? files(join(d, e.name))
        : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
          ? [join(d, e.name)]
          : [],
    );
  const found = files(src).filter(
    (f) => !f.endsWith('gateway/errors.ts') && readFileSync(f, 'utf8').includes('new ApiError('),
  );
  assert.deepEqual(found, []);
});
