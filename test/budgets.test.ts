// Spending limits end to end: a key's limit refuses the request that would start after it is
// reached (402, before any upstream call, recorded), and 50 concurrent requests against a nearly
// spent budget overshoot it by at most what was in flight, on one gateway and on two gateways
// sharing PostgreSQL and Redis.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { startTestGateway, postgresUrl, type TestGateway } from './helpers/gateway.ts';
import { inferenceRequests } from '../src/gateway/store/schema-inference.ts';
import { apiKeys } from '../src/gateway/store/schema.ts';

const redisUrl = process.env.REDIS_URL;
const BODY = { model: 'local/scripted', messages: [{ role: 'user', content: 'the same words every time' }] };

async function ask(gw: TestGateway, key: string) {
  return gw.call('POST', '/chat/completions', { key, body: BODY });
}

/** A key with the limit, and `spent` already charged to it in the request log. */
async function keyWithSpend(gw: TestGateway, o: { limit: number; spent: number; byok?: boolean }) {
  const made = await gw.call('POST', '/keys', { body: { name: `k-${randomUUID()}`, limit: o.limit } });
  assert.equal(made.status, 201);
  const [row] = await gw.ctx.store.db.select().from(apiKeys).where(eq(apiKeys.hash, made.body.data.hash));
  if (o.spent)
    await gw.ctx.store.db.insert(inferenceRequests).values({
      id: randomUUID(),
      orgId: gw.keys.org_id,
      apiKeyId: row!.id,
      chargedKeyId: row!.id,
      apiStyle: 'chat',
      streamed: false,
      status: 200,
      latencyMs: 1,
      cost: o.spent,
      isByok: o.byok ?? false,
    });
  return { key: made.body.key as string, hash: made.body.data.hash as string, id: row!.id };
}

/** The cost of one request of BODY (every one costs the same). */
async function unitCost(gw: TestGateway): Promise<number> {
  const res = await ask(gw, gw.keys.api_key);
  assert.equal(res.status, 200);
  return res.body.usage.cost as number;
}

async function burst(gws: TestGateway[], key: string, n: number) {
  const all = await Promise.all(Array.from({ length: n }, (_, i) => ask(gws[i % gws.length]!, key)));
  return { ok: all.filter((r) => r.status === 200).length, refused: all.filter((r) => r.status === 402) };
}

describe('key spending limits on one gateway (PGlite)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  test('the request after the limit is reached is 402, before any upstream call, and recorded', async () => {
    const c = await unitCost(gw);
    assert.ok(c > 0);
    const k = await keyWithSpend(gw, { limit: 1, spent: 1 - 1.5 * c });
    assert.equal((await ask(gw, k.key)).status, 200);
    assert.equal((await ask(gw, k.key)).status, 200); // 1.5 c was left: this one starts below the limit
    const refused = await ask(gw, k.key);
    assert.equal(refused.status, 402);
    assert.match(
      refused.body.error.message,
      /^the API key's spending limit of 1 USD is reached; it does not reset: raise the limit$/,
    );
    assert.deepEqual(Object.keys(refused.body.error), ['code', 'message']);
    // raising the limit lets it through at once
    assert.equal((await gw.call('PATCH', `/keys/${k.hash}`, { body: { limit: 2 } })).status, 200);
    assert.equal((await ask(gw, k.key)).status, 200);
    await gw.ctx.inference.flush();
    const rows = await gw.ctx.store.db.select().from(inferenceRequests).where(eq(inferenceRequests.apiKeyId, k.id));
    const r402 = rows.filter((r) => r.status === 402);
    assert.equal(r402.length, 1);
    assert.deepEqual([r402[0]!.provider, r402[0]!.attempts, r402[0]!.cost], [null, 0, null]);
  });

  test('BYOK spend counts against the limit only with include_byok_in_limit', async () => {
    const k = await keyWithSpend(gw, { limit: 1, spent: 5, byok: true });
    assert.equal((await ask(gw, k.key)).status, 200);
    assert.equal((await gw.call('PATCH', `/keys/${k.hash}`, { body: { include_byok_in_limit: true } })).status, 200);
    assert.equal((await ask(gw, k.key)).status, 402);
  });

  test('50 concurrent requests against a nearly spent budget overshoot by at most one request', async () => {
    const c = await unitCost(gw);
    const k = await keyWithSpend(gw, { limit: 1, spent: 1 - 3.5 * c });
    assert.equal((await ask(gw, k.key)).status, 200); // its cost is what the next ones reserve
    const { ok, refused } = await burst([gw], k.key, 50);
    assert.equal(ok, 3, 'room for 2.5 requests: 3 start below the limit');
    assert.equal(refused.length, 47);
    await gw.ctx.inference.flush();
    const after = (await gw.call('GET', `/keys/${k.hash}`)).body.data;
    assert.ok(after.usage - 1 <= c + 1e-12, `overshoot ${after.usage - 1} > one request (${c})`);
  });
});

describe('key spending limits on two gateways sharing PostgreSQL and Redis', {
  skip: (!postgresUrl || !redisUrl) && 'DATABASE_URL and REDIS_URL are needed',
}, () => {
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    a = await startTestGateway({ postgres: true, env: { REDIS_URL: redisUrl! } });
    b = await startTestGateway({ pgSchema: a.pgSchema, keys: a.keys, env: { REDIS_URL: redisUrl! } });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  test('50 concurrent requests split over both overshoot by at most one request', async () => {
    const c = await unitCost(a);
    const k = await keyWithSpend(a, { limit: 1, spent: 1 - 3.5 * c });
    assert.equal((await ask(b, k.key)).status, 200);
    const { ok, refused } = await burst([a, b], k.key, 50);
    assert.equal(ok, 3);
    assert.equal(refused.length, 47);
    await Promise.all([a.ctx.inference.flush(), b.ctx.inference.flush()]);
    const usage = (await a.call('GET', `/keys/${k.hash}`)).body.data.usage;
    assert.ok(usage - 1 <= c + 1e-12, `overshoot ${usage - 1} > one request (${c})`);
  });
});
