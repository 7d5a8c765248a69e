// `node --import tsx bench/request-log-copy.ts`: what one request-log row costs PGlite's thread,
// by the indexes it enters. The request log writes its rows as a COPY of up to 1000 a batch
// (src/gateway/inference/request-log.ts); here batches of a model request's row go into tables
// that differ only in their indexes, in one PGlite, taking turns, and the process's CPU time
// around each COPY (its main thread waits meanwhile) is divided by the rows. Prints the median
// µs per row of each table after five warm-up rounds, with each batch sent in both of the forms
// the request log writes on PGlite: PostgreSQL's binary COPY format (its form since 2026-11-27)
// and CSV (the fallback for a batch a value of which only the text form carries); the encoding on
// the main thread is included. BENCH_ROUNDS (40), BENCH_BATCHES (1000; a comma-separated list
// compares batch sizes on the migrated schema's indexes).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { getTableColumns } from 'drizzle-orm';
import { openStore } from '../src/gateway/store/db.ts';
import { migrate } from '../src/gateway/store/migrate.ts';
import type { PgliteThread } from '../src/gateway/store/pglite-thread.ts';
import { toCopyBinary, toCsv } from '../src/gateway/inference/request-log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../src/gateway/store/schema-inference.ts';
import { uuidv7 } from '../src/gateway/crypto/uuid7.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);
const BATCHES = (process.env.BENCH_BATCHES ?? '1000').split(',').map(Number);
const PARTIAL = [
  '(generation_id) where generation_id is not null',
  '(org_id, session_id) where session_id is not null',
  '(guardrail_id, created_at) where guardrail_id is not null',
];
/** Besides the primary key and the partial indexes (which a plain request's row does not enter). */
const TABLES: Record<string, string[]> = {
  'before 0015': ['(workspace_id, created_at)', '(org_id, created_at)', '(charged_key_id, created_at)'],
  'after 0015': ['(org_id, created_at)', '(charged_key_id, created_at)'],
  'primary key only': [],
};
const COLUMNS = Object.values(getTableColumns(inferenceRequests))
  .map((c) => c.name)
  .join(', ');

const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-copy-'));
const store = await openStore({ dataDir: dir });
await migrate(store);
const client = (store.db as unknown as { $client: PgliteThread }).$client;
const names = Object.keys(TABLES);
for (const [i, name] of names.entries()) {
  await client.query(`create table r${i} (like inference_requests including defaults)`);
  await client.query(`alter table r${i} add primary key (id)`);
  for (const index of [...TABLES[name]!, ...PARTIAL]) await client.query(`create index on r${i} ${index}`);
}

const orgId = randomUUID();
const workspaceId = randomUUID();
const keyId = randomUUID();
/** A plain chat completion's row, as rowOf makes it (no bodies kept). */
const row = (): InferenceRequestRow => ({
  id: `gen-${uuidv7()}`,
  orgId,
  workspaceId,
  apiKeyId: keyId,
  chargedKeyId: keyId,
  guardrailId: null,
  userId: null,
  apiStyle: 'chat',
  requestedModel: 'openai/gpt-4o-mini',
  model: 'gpt-4o-mini',
  provider: 'openai',
  credentialId: null,
  isByok: false,
  streamed: false,
  attempts: 1,
  status: 200,
  finishReason: 'stop',
  error: null,
  latencyMs: 3,
  promptTokens: 12,
  completionTokens: 7,
  totalTokens: 19,
  cachedTokens: null,
  cost: 0.0000123,
  requestBody: null,
  responseBody: null,
  createdAt: new Date(),
  sessionId: null,
  externalUser: null,
  metadata: null,
  routing: 'price: openai',
  generationId: null,
  step: null,
});

const sizes =
  BATCHES.length > 1
    ? BATCHES.map((b) => ({ table: 1, batch: b }))
    : names.map((_, t) => ({ table: t, batch: BATCHES[0]! }));
const cases = sizes.flatMap((c) => (['binary', 'csv'] as const).map((format) => ({ ...c, format })));
const perRow = cases.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++) {
  for (const [i, c] of cases.entries()) {
    const rows = Array.from({ length: c.batch }, row);
    const before = process.cpuUsage();
    const blob = new Blob([c.format === 'csv' ? toCsv(rows) : toCopyBinary(rows)!]);
    await client.query(`copy r${c.table} (${COLUMNS}) from '/dev/blob' with (format ${c.format})`, [], { blob });
    const used = process.cpuUsage(before);
    if (round >= 5) perRow[i]!.push((used.user + used.system) / c.batch);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(
  `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`,
);
console.log('| indexes | rows a batch | form | CPU µs per row (median) |\n|---|---:|---|---:|');
for (const [i, c] of cases.entries())
  console.log(`| ${names[c.table]} | ${c.batch} | ${c.format} | ${median(perRow[i]!).toFixed(1)} |`);
await store.close();
rmSync(dir, { recursive: true, force: true });
