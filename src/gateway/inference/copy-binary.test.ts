import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getTableColumns } from 'drizzle-orm';
import { openStore } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import type { PgliteThread } from '../store/pglite-thread.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import { toCopyBinary, toCsv } from './request-log.ts';
import { binaryCopyEncoder } from './copy-binary.ts';

const COLUMNS = Object.values(getTableColumns(inferenceRequests))
  .map((c) => c.name)
  .join(', ');

const row = (over: Partial<InferenceRequestRow>): InferenceRequestRow => ({
  id: `gen-${randomUUID()}`,
  orgId: randomUUID(),
  workspaceId: randomUUID().toUpperCase(),
  apiKeyId: randomUUID().replaceAll('-', ''),
  userId: null,
  apiStyle: 'chat',
  requestedModel: 'openai/gpt-4o-mini',
  model: 'gpt-4o-mini',
  provider: 'openai',
  credentialId: null,
  isByok: true,
  streamed: false,
  attempts: 2,
  status: 502,
  finishReason: 'stop',
  error: 'upstream said "no", then\nnothing, twice',
  latencyMs: 0,
  promptTokens: -1,
  completionTokens: 2_147_483_647,
  totalTokens: null,
  cachedTokens: 0,
  cost: 0.000000123,
  requestBody: { messages: [{ role: 'user', content: 'héllo 😀 "quoted", a\\b' }], n: 1.5, deep: { a: [null, true] } },
  responseBody: null,
  createdAt: new Date('2026-11-21T10:00:00.123Z'),
  generationId: null,
  step: 3,
  chargedKeyId: null,
  guardrailId: null,
  sessionId: 'sess,1',
  externalUser: 'ünïcode \u{1F600}',
  metadata: { k: 'v' },
  routing: 'sort=price; session=sticky',
  ...over,
});

/** Every value the log stores, the same whether the batch went as CSV or in binary. */
test('a batch written in the binary COPY form reads back exactly as the same batch written as CSV', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-copy-binary-'));
  const store = await openStore({ dataDir: dir });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await migrate(store);
  const client = (store.db as unknown as { $client: PgliteThread }).$client;
  await client.query('create table by_csv (like inference_requests including defaults)');
  await client.query('create table by_binary (like inference_requests including defaults)');
  const rows = [
    row({}),
    row({ error: 'a NUL \0 inside', requestBody: { text: 'a \u0000 escape, a lone \ud800 half' } }),
    row({ createdAt: new Date('1999-12-31T23:59:59.999Z'), latencyMs: 1234, cost: -0.5, isByok: false }),
    row({ createdAt: new Date('1970-01-01T00:00:00.000Z'), promptTokens: -2_147_483_648, metadata: null }),
    row({ workspaceId: null, apiKeyId: null, requestBody: null, routing: '', sessionId: null }),
  ];
  const binary = toCopyBinary(rows);
  assert.ok(binary, 'every value here has a binary form');
  await client.query(`copy by_csv (${COLUMNS}) from '/dev/blob' with (format csv)`, [], {
    blob: new Blob([toCsv(rows)]),
  });
  await client.query(`copy by_binary (${COLUMNS}) from '/dev/blob' with (format binary)`, [], {
    blob: new Blob([binary]),
  });
  const read = async (table: string) =>
    (await client.query<{ j: string }>(`select to_jsonb(t)::text as j from ${table} t order by id`)).rows.map(
      (r) => r.j,
    );
  const csv = await read('by_csv');
  assert.equal(csv.length, rows.length);
  assert.deepEqual(await read('by_binary'), csv);
});

test('a value only the text form carries makes the batch go as CSV, where the store judges it', () => {
  for (const bad of [
    { orgId: 'not-a-uuid' },
    { orgId: `${randomUUID()}x` },
    { orgId: 'g'.repeat(32) },
    { latencyMs: 1.5 },
    { completionTokens: 2_147_483_648 },
    { createdAt: new Date(Number.NaN) },
    { model: { not: 'text' } as unknown as string },
    { isByok: 'yes' as unknown as boolean },
  ] satisfies Partial<InferenceRequestRow>[])
    assert.equal(toCopyBinary([row({}), row(bad)]), null, JSON.stringify(bad));
  assert.ok(toCopyBinary([row({}), row({})]));
  assert.ok(toCopyBinary([]));
});

/** A uuid as PostgreSQL gives it back: lower case, with its hyphens. */
const canonical = (u: string | null | undefined) =>
  u ? u.toLowerCase().replace(/^(.{8})-?(.{4})-?(.{4})-?(.{4})-?(.{12})$/, '$1-$2-$3-$4-$5') : null;

test('rows appended one at a time read back from the batch as they were, and a row the binary form cannot carry leaves the batch as it was', () => {
  const columns = Object.entries(getTableColumns(inferenceRequests)).map(([key, c]) => ({
    key,
    sqlType: c.getSQLType(),
  }));
  const copy = binaryCopyEncoder(columns, { text: (s) => s, json: (v) => JSON.stringify(v) });
  const rows = [
    row({}),
    row({ createdAt: new Date('1999-12-31T23:59:59.999Z'), cost: -0.5, isByok: false, externalUser: '' }),
    row({ createdAt: new Date('1970-01-01T00:00:00.000Z'), promptTokens: -2_147_483_648, requestBody: 'text' }),
    row({ workspaceId: null, apiKeyId: undefined, requestBody: null, metadata: null, step: null }),
  ];
  const batch = copy.open();
  for (const [i, r] of rows.entries()) {
    assert.equal(copy.append(batch, r), true);
    assert.equal(copy.append(batch, row({ latencyMs: 1.5 })), false, 'refused after row ' + i);
  }
  const expected = rows.map((r) => {
    const out: Record<string, unknown> = {};
    for (const { key } of columns) out[key] = r[key as keyof InferenceRequestRow] ?? null;
    for (const key of ['orgId', 'workspaceId', 'apiKeyId', 'credentialId', 'chargedKeyId', 'guardrailId'])
      out[key] = canonical(out[key] as string | null);
    return out;
  });
  assert.deepEqual(copy.rows(batch), expected);
  const whole = copy.finish(batch);
  assert.deepEqual(whole, copy.batch(rows), 'the same bytes as the batch encoded whole');
  assert.deepEqual(copy.rows(batch), expected, 'read back after its trailer too');
  assert.deepEqual(copy.rows(copy.open()), []);
  const reused = copy.open(batch);
  assert.equal(reused, batch, 'the same buffer, begun again');
  assert.equal(copy.append(reused, rows[3]!), true);
  assert.deepEqual(copy.rows(reused), [expected[3]]);
});
