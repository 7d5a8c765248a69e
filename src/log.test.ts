import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scrub } from './log.ts';

test("scrub hides API keys, bearer tokens and a URL's credentials, and leaves the rest", () => {
  assert.equal(scrub('key ck-abcdefghijklmnopqrstuvwxyz0123 used'), 'key [REDACTED] used');
  assert.equal(scrub('header Bearer sk-upstream-123'), 'header [REDACTED]');
  assert.equal(scrub('connect postgres://cohort:s3cr%40t@db.internal:5432/cohort failed'), 'connect postgres://[REDACTED]@db.internal:5432/cohort failed');
  assert.equal(scrub('redis://:hunter2@127.0.0.1:6379 and postgres://ops@db/x'), 'redis://[REDACTED]@127.0.0.1:6379 and postgres://[REDACTED]@db/x');
  assert.equal(scrub('see https://example.com/a@b and mail ops@example.com'), 'see https://example.com/a@b and mail ops@example.com');
});
