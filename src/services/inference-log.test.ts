import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { openStore } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createLogger } from '../log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import { createRequestLog, shouldStoreBodies } from './inference-log.ts';

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

test('rows reach PGlite exactly: quotes, commas, newlines, empty strings, NULLs, numbers and JSON bodies', async () => {
  const store = await openStore({});
  await migrate(store);
  const log = createRequestLog({ db: store.db, log: createLogger({ level: 'silent' }) });
  const rows = [
    row({ requestedModel: 'say "hi", twice\nplease', error: '', userId: 'u,1', attempts: 3, cost: 0.000125, isByok: true, streamed: true }),
    row({ requestBody: { messages: [{ role: 'user', content: 'a "quoted", line\nand more' }] }, responseBody: { content: '' }, latencyMs: 17 }),
    row({}),
  ];
  for (const r of rows) log.add(r);
  await log.flush();
  const stored = await store.db.select().from(inferenceRequests);
  const byId = new Map(stored.map((r) => [r.id, r]));
  assert.equal(stored.length, 3);
  for (const r of rows) assert.deepEqual(byId.get(r.id), r);
  await store.close();
});

test('bodies are kept only when I/O logging is on, the key passes the filter and the sample hits', () => {
  const on = { enabled: true, samplingRate: 0.5, apiKeyIds: null };
  assert.equal(shouldStoreBodies({ ...on, enabled: false }, { apiKeyId: 'k', random: 0 }), false);
  assert.equal(shouldStoreBodies(on, { apiKeyId: 'k', random: 0.49 }), true);
  assert.equal(shouldStoreBodies(on, { apiKeyId: 'k', random: 0.5 }), false);
  assert.equal(shouldStoreBodies({ ...on, apiKeyIds: ['other'] }, { apiKeyId: 'k', random: 0 }), false);
  assert.equal(shouldStoreBodies({ ...on, apiKeyIds: ['k'] }, { apiKeyId: 'k', random: 0 }), true);
});
