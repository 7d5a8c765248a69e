import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { openStore } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createLogger } from '../../shared/log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import { columnArrays, createRequestLog, shouldStoreBodies } from './request-log.ts';
import { getTableColumns, sql } from 'drizzle-orm';

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

test('a database that is gone loses the batch in one line, without a retry per row', async () => {
  const store = await openStore({});
  await migrate(store);
  const { lines, log } = capture();
  const requestLog = createRequestLog({ db: store.db, log });
  await store.close();
  for (let i = 0; i < 10; i++) requestLog.add(row({}));
  await requestLog.flush();
  assert.deepEqual(
    lines.map((l) => [JSON.parse(l).msg, JSON.parse(l).rows]),
    [['could not write the inference request log', 10]],
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
