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
