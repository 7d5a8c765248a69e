import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { openStore } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createLogger } from '../../shared/log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import {
  columnArrays,
  createRequestLog,
  isRowFault,
  isStoreFull,
  retryDelayMs,
  shouldStoreBodies,
} from './request-log.ts';
import { spillRows } from './request-log-spill.ts';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { getTableColumns, sql } from 'drizzle-orm';
import { waitFor } from '../../../test/helpers/wait.ts';

const row = (over: Partial<InferenceRequestRow>): InferenceRequestRow => ({
  id: `gen-${randomUUID()}`,
  orgId: randomUUID(),
  workspaceId: null,
  apiKeyId: null,
  userId: null,
  apiStyle: 'chat',
  requestedModel: null,
  model: null,
  provider: null,
  credentialId: null,
  isByok: false,
  streamed: false,
  attempts: 0,
  status: 200,
  finishReason: null,
  error: null,
  latencyMs: 0,
  promptTokens: null,
  completionTokens: null,
  totalTokens: null,
  cachedTokens: null,
  cost: null,
  requestBody: null,
  responseBody: null,
  createdAt: new Date('2026-11-21T10:00:00.000Z'),
  generationId: null,
  step: null,
  chargedKeyId: null,
  guardrailId: null,
  sessionId: null,
  externalUser: null,
  metadata: null,
  routing: null,
  ...over,
});

const pgUrl = process.env.DATABASE_URL;
const pgSchema = `log_${randomUUID().slice(0, 8)}`;
const stores = [
  { name: 'PGlite (COPY)', open: () => openStore({}) },
  {
    name: 'PostgreSQL (one array per column)',
    open: () => openStore({ databaseUrl: pgUrl, pgSchema }),
    skip: pgUrl ? false : 'DATABASE_URL is not set',
  },
];

for (const s of stores)
  test(`rows reach ${s.name} exactly: quotes, commas, newlines, empty strings, NULLs, numbers and JSON bodies`, {
    skip: s.skip,
  }, async () => {
    const store = await s.open();
    await migrate(store);
    const log = createRequestLog({ db: store.db, log: createLogger({ level: 'silent' }) });
    const rows = [
      row({
        requestedModel: 'say "hi", twice\nplease',
        error: '',
        userId: 'u,1',
        attempts: 3,
        cost: 0.000125,
        isByok: true,
        streamed: true,
      }),
      row({
        requestBody: { messages: [{ role: 'user', content: 'a "quoted", line\nand more' }] },
        responseBody: { content: '' },
        latencyMs: 17,
      }),
      row({}),
    ];
    for (const r of rows) log.add(r);
    await log.flush();
    const stored = await store.db.select().from(inferenceRequests);
    const byId = new Map(stored.map((r) => [r.id, r]));
    assert.equal(stored.length, 3);
    for (const r of rows) assert.deepEqual(byId.get(r.id), r);
    if (store.kind === 'postgres') await store.db.execute(sql.raw(`drop schema ${pgSchema} cascade`));
    await store.close();
  });

/** A logger whose lines the test reads. */
function capture() {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
  return { lines, log: createLogger({ level: 'error', destination }) };
}

const FFFD = '\uFFFD';

for (const s of stores)
  test(`on ${s.name}, a NUL or unpaired surrogate in any logged text is stored as U+FFFD and loses no row of the batch`, {
    skip: s.skip,
  }, async () => {
    const store = await s.open();
    await migrate(store);
    const { lines, log } = capture();
    const requestLog = createRequestLog({ db: store.db, log });
    const valid = row({
      requestedModel: 'local/scripted',
      model: 'local/scripted',
      userId: 'u1',
      requestBody: { messages: [{ role: 'user', content: 'a "b" \\u0000 \u0001 😀' }] },
      responseBody: { content: 'ok' },
    });
    const poisoned = row({
      requestedModel: 'local/sc\u0000ripted',
      status: 404,
      error: 'model local/sc\u0000ripted not found',
      requestBody: { model: 'local/sc\u0000ripted', user: 'u\u0000x', 'k\u0000': ['\ud800', 'x\\\u0000'] },
      responseBody: { content: 'a\u0000b\udc00' },
    });
    const after = row({ requestedModel: 'openai/gpt-4o' });
    for (const r of [valid, poisoned, after]) requestLog.add(r);
    await requestLog.flush();
    const byId = new Map((await store.db.select().from(inferenceRequests)).map((r) => [r.id, r]));
    assert.equal(byId.size, 3);
    assert.deepEqual(byId.get(valid.id), valid);
    assert.deepEqual(byId.get(after.id), after);
    assert.deepEqual(byId.get(poisoned.id), {
      ...poisoned,
      requestedModel: `local/sc${FFFD}ripted`,
      error: `model local/sc${FFFD}ripted not found`,
      requestBody: { model: `local/sc${FFFD}ripted`, user: `u${FFFD}x`, [`k${FFFD}`]: [FFFD, `x\\${FFFD}`] },
      responseBody: { content: `a${FFFD}b${FFFD}` },
    });
    assert.deepEqual(lines, []);
    if (store.kind === 'postgres') await store.db.execute(sql.raw(`drop schema ${pgSchema} cascade`));
    await store.close();
  });

for (const s of stores)
  test(`on ${s.name}, a row the database still refuses is the only one lost, logged by id without its bodies`, {
    skip: s.skip,
  }, async () => {
    const store = await s.open();
    await migrate(store);
    const { lines, log } = capture();
    const requestLog = createRequestLog({ db: store.db, log });
    const rows = Array.from({ length: 40 }, (_, i) => row({ requestedModel: `m${i}` }));
    const bad = row({
      orgId: 'not-a-uuid',
      requestBody: { content: 'private prompt' },
      responseBody: { content: 'private answer' },
    });
    rows.splice(17, 0, bad);
    for (const r of rows) requestLog.add(r);
    await requestLog.flush();
    const stored = new Set(
      (await store.db.select({ id: inferenceRequests.id }).from(inferenceRequests)).map((r) => r.id),
    );
    assert.deepEqual(stored, new Set(rows.filter((r) => r !== bad).map((r) => r.id)));
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]!);
    assert.deepEqual(
      [line.msg, line.id, line.code],
      ['could not write a row of the inference request log; it is lost', bad.id, '22P02'],
    );
    assert.doesNotMatch(lines[0]!, /private/);
    if (store.kind === 'postgres') await store.db.execute(sql.raw(`drop schema ${pgSchema} cascade`));
    await store.close();
  });

/** A logger at `level` whose lines (parsed) the test reads. */
function lines(level: 'warn' | 'info' = 'warn') {
  const out: Record<string, unknown>[] = [];
  const destination = new Writable({ write: (chunk, _enc, cb) => (out.push(JSON.parse(String(chunk))), cb()) });
  return { out, log: createLogger({ level, destination }) };
}
const spillDir = () => join(mkdtempSync(join(tmpdir(), 'cohort-spill-')), 'request-log');
const fast = { firstMs: 10, maxMs: 20 };

test('a database that is gone: the rows are kept and retried (one line, not one a try), spilled at shutdown, and written from disk by the next log on a working store', async () => {
  const dead = await openStore({});
  await migrate(dead);
  const { out, log } = lines();
  const dir = spillDir();
  const lostRows: [string, number][] = [];
  const first = createRequestLog({
    db: dead.db,
    log,
    spillDir: dir,
    closeMs: 100,
    retry: fast,
    onLost: (r, n) => lostRows.push([r, n]),
  });
  await dead.close();
  const rows = Array.from({ length: 10 }, (_, i) => row({ requestedModel: `m${i}` }));
  for (const r of rows) first.add(r);
  await first.flush(); // resolves once refused: the rows stay queued
  assert.deepEqual(first.pending(), { memory: 10, disk: 0 });
  // A fixed wait on purpose: the retries are invisible from outside (that they log nothing more is
  // what is asserted), so the test gives them time to happen.
  await new Promise((r) => setTimeout(r, 100));
  await first.close();
  assert.deepEqual(first.pending(), { memory: 0, disk: 0 });
  assert.deepEqual(lostRows, []);
  assert.deepEqual(
    out.map((l) => [l.msg, l.rows]),
    [
      ['the store did not take the inference request log; its rows are kept and retried', 10],
      [
        'the store did not take the inference request log before shutdown; its rows wait on disk for the next start',
        10,
      ],
    ],
  );
  assert.equal(readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length, 1);

  const store = await openStore({});
  await migrate(store);
  const next = createRequestLog({ db: store.db, log: createLogger({ level: 'silent' }), spillDir: dir });
  assert.deepEqual(next.pending(), { memory: 0, disk: 10 });
  await waitFor('the spilled rows are written', () => next.pending().disk === 0);
  const stored = await store.db.select().from(inferenceRequests);
  assert.deepEqual(stored.map((r) => r.id).sort(), rows.map((r) => r.id).sort());
  assert.deepEqual(new Map(stored.map((r) => [r.id, r])).get(rows[3]!.id), rows[3]);
  assert.deepEqual(readdirSync(dir), []);
  await next.close();
  await store.close();
});

test('rows already in the store (a write whose answer was lost) are written once when replayed, and none is counted lost', async () => {
  const store = await openStore({});
  await migrate(store);
  const dir = spillDir();
  const rows = Array.from({ length: 6 }, () => row({}));
  // The first three reached the store before the gateway stopped; all six were spilled.
  const before = createRequestLog({ db: store.db, log: createLogger({ level: 'silent' }) });
  for (const r of rows.slice(0, 3)) before.add(r);
  await before.flush();
  spillRows(dir, rows);
  const lostRows: unknown[] = [];
  const { out, log } = lines();
  const replaying = createRequestLog({ db: store.db, log, spillDir: dir, onLost: (...a) => lostRows.push(a) });
  await waitFor('the spilled rows are replayed', () => replaying.pending().disk === 0);
  const stored = await store.db.select({ id: inferenceRequests.id }).from(inferenceRequests);
  assert.deepEqual(stored.map((r) => r.id).sort(), rows.map((r) => r.id).sort());
  assert.deepEqual([lostRows, out], [[], []]);
  await replaying.close();
  await store.close();
});

test('rows neither the store nor the disk takes: kept up to twice the queue bound, then each one lost is counted and logged by id', async () => {
  const dead = await openStore({});
  await migrate(dead);
  await dead.close();
  // A file where the spill directory should be: the disk refuses every spill.
  const blocked = join(mkdtempSync(join(tmpdir(), 'cohort-spill-')), 'file');
  writeFileSync(blocked, '');
  const lostRows: [string, number][] = [];
  const { out, log } = lines();
  const l = createRequestLog({
    db: dead.db,
    log,
    spillDir: join(blocked, 'request-log'),
    maxQueued: 4,
    spillAfterMs: 0,
    closeMs: 50,
    retry: fast,
    onLost: (r, n) => lostRows.push([r, n]),
  });
  const rows = Array.from({ length: 12 }, () => row({ requestBody: { content: 'private prompt' } }));
  for (const r of rows.slice(0, 4)) l.add(r);
  await l.flush();
  // A fixed wait on purpose, as above: a retry and a refused spill, neither visible from outside.
  await new Promise((r) => setTimeout(r, 60));
  for (const r of rows.slice(4)) l.add(r);
  assert.deepEqual(lostRows, [
    ['overflow', 1],
    ['overflow', 1],
    ['overflow', 1],
    ['overflow', 1],
  ]);
  await l.close();
  assert.deepEqual(lostRows.at(-1), ['shutdown', 8]);
  const lostIds = out.filter((o) => o.level === 50).flatMap((o) => o.ids as string[]);
  assert.deepEqual(lostIds.sort(), rows.map((r) => r.id).sort());
  assert.deepEqual(
    out.filter((o) => o.level === 50).map((o) => o.msg),
    [
      ...Array(4).fill('the inference request log queue is full and the disk refused it; a row is lost'),
      'could not write or spill the inference request log at shutdown; rows are lost',
    ],
  );
  assert.doesNotMatch(JSON.stringify(out), /private/);
});

test('PostgreSQL: a batch whose connection is cut mid-write is written again, and every row is stored exactly once', {
  skip: pgUrl ? false : 'DATABASE_URL is not set',
}, async () => {
  const schema = `log_${randomUUID().slice(0, 8)}`;
  // Its connections named, so the cuts end only this test's backends.
  const url = new URL(pgUrl!);
  url.searchParams.set('application_name', schema);
  const store = await openStore({ databaseUrl: url.href, pgSchema: schema, poolSize: 2 });
  await migrate(store);
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  const { out, log } = lines('info');
  const requestLog = createRequestLog({ db: store.db, log, retry: fast });
  const rows: InferenceRequestRow[] = [];
  const add = (n: number) => {
    for (let i = 0; i < n; i++) rows.push(row({ requestedModel: `m${rows.length}` }));
    for (const r of rows.slice(-n)) requestLog.add(r);
  };
  try {
    add(100);
    await requestLog.flush();
    for (let cut = 0; cut < 2; cut++) {
      // A lock holds the next batch's insert in flight; its backend is then terminated under it.
      await admin.query('begin');
      await admin.query(`lock table ${schema}.inference_requests in access exclusive mode`);
      add(200);
      const flushed = requestLog.flush();
      const waiting = async () =>
        (
          await admin.query(
            "select pid from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
            [schema],
          )
        ).rows as { pid: number }[];
      await waitFor('the insert waits on the lock', async () => (await waiting()).length > 0);
      const [held] = await waiting();
      assert.ok(held);
      await admin.query('select pg_terminate_backend($1)', [held.pid]);
      await admin.query('rollback');
      await flushed;
      await waitFor('the rows are written', () => requestLog.pending().memory === 0);
    }
    add(100);
    await requestLog.close();
    const stored = await store.db.select({ id: inferenceRequests.id }).from(inferenceRequests);
    assert.equal(stored.length, rows.length);
    assert.deepEqual(new Set(stored.map((r) => r.id)), new Set(rows.map((r) => r.id)));
    assert.deepEqual(
      out.map((l) => [l.msg, l.code]),
      [
        ['the store did not take the inference request log; its rows are kept and retried', '57P01'],
        ['the inference request log is written again', undefined],
        ['the store did not take the inference request log; its rows are kept and retried', '57P01'],
        ['the inference request log is written again', undefined],
      ],
    );
  } finally {
    await admin.query('rollback').catch(() => {});
    await admin.end();
    await store.db.execute(sql.raw(`drop schema ${schema} cascade`));
    await store.close();
  }
});

test('which failures are a row’s, which mean the store cannot write, and the waits between tries', () => {
  const cases: [unknown, boolean, boolean][] = [
    [{ code: '22P02' }, true, false],
    [{ code: '23505' }, true, false],
    [{ code: '53100' }, false, true],
    [{ code: '58030' }, false, true],
    [{ code: '57P01' }, false, false],
    [new Error('could not extend file "base/5/1": No space left on device'), false, true],
    [new Error('Connection terminated unexpectedly'), false, false],
    [null, false, false],
  ];
  for (const [err, row, full] of cases) assert.deepEqual([isRowFault(err), isStoreFull(err)], [row, full], String(err));
  assert.deepEqual(
    [0, 1, 2, 3, 10].map((a) => retryDelayMs(a, { firstMs: 250, maxMs: 2000 })),
    [250, 500, 1000, 2000, 2000],
  );
});

test('the column arrays hold each row’s value in column order: NULL as null, JSON columns as JSON text', () => {
  const rows = [row({ requestBody: { a: [1, 'x"y'] }, cost: 0.5, error: 'é\n"' }), row({ isByok: true })];
  const keys = Object.keys(getTableColumns(inferenceRequests)) as (keyof InferenceRequestRow)[];
  const arrays = columnArrays(rows);
  assert.equal(arrays.length, keys.length);
  const col = (k: keyof InferenceRequestRow) => arrays[keys.indexOf(k)];
  assert.deepEqual(col('requestBody'), ['{"a":[1,"x\\"y"]}', null]);
  assert.deepEqual(col('error'), ['é\n"', null]);
  assert.deepEqual(col('cost'), [0.5, null]);
  assert.deepEqual(col('isByok'), [false, true]);
  assert.deepEqual(col('createdAt'), [rows[0]!.createdAt, rows[1]!.createdAt]);
  assert.deepEqual(
    columnArrays([]),
    keys.map(() => []),
  );
});

test('bodies are kept only when I/O logging is on, the key passes the filter and the sample hits', () => {
  const on = { enabled: true, samplingRate: 0.5, apiKeyIds: null };
  assert.equal(shouldStoreBodies({ ...on, enabled: false }, { apiKeyId: 'k', random: 0 }), false);
  assert.equal(shouldStoreBodies(on, { apiKeyId: 'k', random: 0.49 }), true);
  assert.equal(shouldStoreBodies(on, { apiKeyId: 'k', random: 0.5 }), false);
  assert.equal(shouldStoreBodies({ ...on, apiKeyIds: ['other'] }, { apiKeyId: 'k', random: 0 }), false);
  assert.equal(shouldStoreBodies({ ...on, apiKeyIds: ['k'] }, { apiKeyId: 'k', random: 0 }), true);
});
