import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createLogger } from '../../shared/log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import { createRetention } from './retention.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T12:00:00Z');

const row = (id: string, ageDays: number, bodies: boolean): InferenceRequestRow => ({
  id,
  orgId: '00000000-0000-4000-8000-000000000001',
  apiStyle: 'chat',
  streamed: false,
  status: 200,
  latencyMs: 5,
  cost: 0.001,
  requestBody: bodies ? { messages: [{ role: 'user', content: 'hi' }] } : null,
  responseBody: bodies ? { content: 'hello' } : null,
  createdAt: new Date(NOW - ageDays * DAY),
});

test('retention: rows past their days are deleted, bodies past theirs cleared, the rest kept; 0 keeps all', async () => {
  const store = await openStore({});
  await migrate(store);
  await store.db
    .insert(inferenceRequests)
    .values([
      row('gen-old', 40, true),
      row('gen-middle', 10, true),
      row('gen-new', 1, true),
      row('gen-plain', 10, false),
    ]);
  const log = createLogger({ level: 'silent' });
  const keepAll = createRetention({ db: store.db, log, rowsDays: 0, bodiesDays: 0, everyMs: 1000, now: () => NOW });
  assert.deepEqual(await keepAll.sweep(), { rows: 0, bodies: 0 });

  const r = createRetention({ db: store.db, log, rowsDays: 30, bodiesDays: 7, everyMs: 1000, now: () => NOW });
  assert.deepEqual(await r.sweep(), { rows: 1, bodies: 1 });
  const left = await store.db
    .select({
      id: inferenceRequests.id,
      req: inferenceRequests.requestBody,
      res: inferenceRequests.responseBody,
      cost: inferenceRequests.cost,
    })
    .from(inferenceRequests)
    .orderBy(inferenceRequests.id);
  assert.deepEqual(left, [
    { id: 'gen-middle', req: null, res: null, cost: 0.001 },
    { id: 'gen-new', req: { messages: [{ role: 'user', content: 'hi' }] }, res: { content: 'hello' }, cost: 0.001 },
    { id: 'gen-plain', req: null, res: null, cost: 0.001 },
  ]);
  // A second sweep at the same moment has nothing left to do; 21 days on, the 10-day-old rows go and the new one's bodies.
  assert.deepEqual(await r.sweep(), { rows: 0, bodies: 0 });
  const later = createRetention({
    db: store.db,
    log,
    rowsDays: 30,
    bodiesDays: 7,
    everyMs: 1000,
    now: () => NOW + 21 * DAY,
  });
  assert.deepEqual(await later.sweep(), { rows: 2, bodies: 1 });
  await store.close();
});
