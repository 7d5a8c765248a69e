import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { createLogger, prettyFor, scrub } from './log.ts';
import { openStore } from '../gateway/store/db.ts';

test("scrub hides API keys, bearer tokens and a URL's credentials, and leaves the rest", () => {
  assert.equal(scrub('key ck-abcdefghijklmnopqrstuvwxyz0123 used'), 'key [REDACTED] used');
  assert.equal(scrub('header Bearer sk-upstream-123'), 'header [REDACTED]');
  assert.equal(
    scrub('connect postgres://cohort:s3cr%40t@db.internal:5432/cohort failed'),
    'connect postgres://[REDACTED]@db.internal:5432/cohort failed',
  );
  assert.equal(
    scrub('redis://:hunter2@127.0.0.1:6379 and postgres://ops@db/x'),
    'redis://[REDACTED]@127.0.0.1:6379 and postgres://[REDACTED]@db/x',
  );
  assert.equal(
    scrub('see https://example.com/a@b and mail ops@example.com'),
    'see https://example.com/a@b and mail ops@example.com',
  );
});

test('a logged database error keeps its query and location but not the parameters or the value it quotes', async () => {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
  const log = createLogger({ level: 'error', destination });
  const store = await openStore({});
  const sealed = 'v1.sealed-ciphertext-AAAA';
  const failures = [
    store.db.execute(sql`select ${sealed}::text, ${'a\u0000b'}::text`),
    store.db.execute(sql`select ${sealed}::text, ${'{"secret": "body text\\u0000"}'}::jsonb`),
  ];
  for (const f of failures)
    log.error(
      {
        err: await f.then(
          () => assert.fail('the query succeeded'),
          (e: unknown) => e,
        ),
      },
      'failed',
    );
  await store.close();
  assert.equal(lines.length, 2);
  for (const line of lines) {
    assert.ok(!line.includes(sealed) && !line.includes('secret') && !line.includes('body text'), line);
    const { err } = JSON.parse(line) as { err: { message: string; params: string; query: string } };
    assert.equal(err.params, '[REDACTED]');
    assert.match(err.message, /^Failed query: select \$1::.+\nparams: \[REDACTED\]: /);
  }
  const where = 'COPY inference_requests, line 2, column request_body: "{"content": "private\nmore"}"';
  const raw = Object.assign(new Error('invalid input syntax for type json'), { code: '22P02', where });
  log.error({ err: raw }, 'failed');
  assert.equal(JSON.parse(lines[2]!).err.where, 'COPY inference_requests, line 2, column request_body: [REDACTED]');
});

test('on a terminal lines are readable, and hide the same secrets as JSON lines', () => {
  assert.deepEqual(
    [prettyFor(undefined, true), prettyFor(undefined, false), prettyFor('json', true), prettyFor('pretty', false)],
    [true, false, false, true],
  );
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
  const log = createLogger({ level: 'info', destination, pretty: true });
  log.info(
    { url: 'http://127.0.0.1:8080/api/v1', authorization: 'Bearer ck-abcdefghijklmnopqrstuvwxyz0123' },
    'cohort gateway listening with ck-abcdefghijklmnopqrstuvwxyz0123',
  );
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: cohort gateway listening with \[REDACTED\]\n {4}url: "http:\/\/127\.0\.0\.1:8080\/api\/v1"\n {4}authorization: "\[REDACTED\]"\n$/,
  );
});
