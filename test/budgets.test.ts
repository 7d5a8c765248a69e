// Spending limits and guardrails end to end: a key's limit refuses the request that would start
// after it is reached (402, before any upstream call, recorded), and 50 concurrent requests
// against a nearly spent budget overshoot it by at most what was in flight, on one gateway and on
// two gateways sharing PostgreSQL and Redis. A guardrail's limit, models and providers hold for
// its keys, its members' keys, its workspace's keys without one, and the interns they create.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { startTestGateway, postgresUrl, type TestGateway } from './helpers/gateway.ts';
import { inferenceRequests } from '../src/gateway/store/schema-inference.ts';
import { apiKeys } from '../src/gateway/store/schema.ts';
import { interns } from '../src/gateway/store/schema-interns.ts';
import { createKey, createUser, addMember } from '../src/gateway/access/identity-store.ts';
import { hashKey } from '../src/gateway/crypto/keys.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { upstreamEnv } from './helpers/inference-fixtures.ts';

const redisUrl = process.env.REDIS_URL;
const BODY = { model: 'local/scripted', messages: [{ role: 'user', content: 'the same words every time' }] };

async function ask(gw: TestGateway, key: string, model = 'local/scripted') {
  return gw.call('POST', '/chat/completions', { key, body: { ...BODY, model } });
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

  test('a key changed through one gateway is changed at once on the other', async () => {
    const k = await keyWithSpend(a, { limit: 1, spent: 1 });
    // b resolves (and caches) the key: spent
    assert.equal((await ask(b, k.key)).status, 402);
    assert.equal((await a.call('PATCH', `/keys/${k.hash}`, { body: { limit: 2 } })).status, 200);
    assert.equal((await ask(b, k.key)).status, 200);
    assert.equal((await a.call('PATCH', `/keys/${k.hash}`, { body: { disabled: true } })).status, 200);
    assert.equal((await ask(b, k.key)).status, 401);
    const g = (await b.call('POST', '/guardrails', { body: { name: 'shared', ignored_providers: ['local'] } })).body
      .data;
    await a.call('PATCH', `/keys/${k.hash}`, { body: { disabled: false } });
    assert.equal((await ask(a, k.key)).status, 200);
    await b.call('POST', `/guardrails/${g.id}/assignments/keys`, { body: { key_hashes: [k.hash] } });
    assert.equal((await ask(a, k.key)).status, 403);
  });
});

describe('guardrails on model requests (PGlite)', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({ env: upstreamEnv(up) });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });
  const guardrail = async (body: Record<string, unknown>) => {
    const res = await gw.call('POST', '/guardrails', { body: { name: `g-${randomUUID()}`, ...body } });
    assert.equal(res.status, 201);
    return res.body.data.id as string;
  };
  const assignKey = async (g: string, key: string) =>
    assert.equal(
      (await gw.call('POST', `/guardrails/${g}/assignments/keys`, { body: { key_hashes: [hashKey(key)] } })).status,
      200,
    );

  test('allowed and ignored models and providers are refused with their reason, before any upstream call', async () => {
    const k = (await gw.call('POST', '/keys', { body: { name: 'ruled' } })).body.key as string;
    const before = up.received.length;
    assert.equal((await ask(gw, k, 'openai/gpt-4o')).status, 200);
    await assignKey(await guardrail({ allowed_models: ['local/scripted'] }), k);
    const notAllowed = await ask(gw, k, 'openai/gpt-4o');
    assert.equal(notAllowed.status, 403);
    assert.match(
      notAllowed.body.error.message,
      /^model openai\/gpt-4o is not among the models the key's guardrail allows \(guardrail [0-9a-f-]{36}\)$/,
    );
    assert.equal((await ask(gw, k)).status, 200);
    await assignKey(await guardrail({ ignored_providers: ['local'] }), k);
    const ignored = await ask(gw, k);
    assert.equal(ignored.status, 403);
    assert.match(ignored.body.error.message, /^provider local is ignored by the key's guardrail/);
    await assignKey(await guardrail({ allowed_providers: ['local'] }), k);
    assert.match((await ask(gw, k, 'openai/gpt-4o')).body.error.message, /^provider openai is not among the providers/);
    await assignKey(await guardrail({ ignored_models: ['openai/gpt-4o'] }), k);
    assert.match((await ask(gw, k, 'openai/gpt-4o')).body.error.message, /^model openai\/gpt-4o is ignored/);
    assert.equal(up.received.length, before + 1, 'only the first request reached the provider');
  });

  test("a guardrail's enforce_zdr makes every request of its keys a zdr one", async () => {
    const k = (await gw.call('POST', '/keys', { body: { name: 'zdr' } })).body.key as string;
    assert.equal((await ask(gw, k, 'openai/gpt-4o')).status, 200);
    await assignKey(await guardrail({ enforce_zdr: true }), k);
    const refused = await ask(gw, k, 'openai/gpt-4o');
    assert.equal(refused.status, 400);
    const asZdr = await gw.call('POST', '/chat/completions', {
      key: gw.keys.api_key,
      body: { ...BODY, model: 'openai/gpt-4o', provider: { zdr: true } },
    });
    assert.deepEqual(refused.body, asZdr.body, 'the same refusal as a request asking for zdr itself');
  });

  test("a guardrail's limit: key assignment over the member's, the member's over the workspace default", async () => {
    const c = await unitCost(gw);
    const spentG = await guardrail({ limit_usd: 1 });
    const openG = await guardrail({ limit_usd: 1000 });
    // spend charged to the spent guardrail already
    await gw.ctx.store.db.insert(inferenceRequests).values({
      id: randomUUID(),
      orgId: gw.keys.org_id,
      guardrailId: spentG,
      apiStyle: 'chat',
      streamed: false,
      status: 200,
      latencyMs: 1,
      cost: 1,
    });
    const k = (await gw.call('POST', '/keys', { body: { name: 'member-capped' } })).body.key as string;
    assert.equal((await ask(gw, k)).status, 200);
    // the workspace default applies to keys without one
    assert.equal(
      (await gw.call('PATCH', '/workspaces/default', { body: { default_guardrail_id: spentG } })).status,
      200,
    );
    const refused = await ask(gw, k);
    assert.equal(refused.status, 402);
    assert.match(refused.body.error.message, /^the guardrail's spending limit of 1 USD is reached/);
    // the member's guardrail comes before the workspace default
    await gw.call('POST', `/guardrails/${openG}/assignments/members`, { body: { member_user_ids: [gw.keys.user_id] } });
    assert.equal((await ask(gw, k)).status, 200);
    // and the key's own before the member's
    await assignKey(spentG, k);
    assert.equal((await ask(gw, k)).status, 402);
    await gw.call('POST', `/guardrails/${spentG}/assignments/keys/remove`, { body: { key_hashes: [hashKey(k)] } });
    assert.equal((await ask(gw, k)).status, 200);
    await gw.call('PATCH', '/workspaces/default', { body: { default_guardrail_id: null } });
    await gw.call('POST', `/guardrails/${openG}/assignments/members/remove`, {
      body: { member_user_ids: [gw.keys.user_id] },
    });
    await gw.ctx.inference.flush();
    const under = await gw.ctx.store.db
      .select()
      .from(inferenceRequests)
      .where(eq(inferenceRequests.guardrailId, openG));
    assert.equal(under.filter((r) => r.status === 200).length, 2, 'the requests that ran under it are its spend');
    assert.ok(Math.abs(under.reduce((a, r) => a + (r.cost ?? 0), 0) - 2 * c) < 1e-12);
  });

  test("BYOK spend counts toward a guardrail when it or the key's workspace says so", async () => {
    const g = await guardrail({ limit_usd: 1 });
    await gw.ctx.store.db.insert(inferenceRequests).values({
      id: randomUUID(),
      orgId: gw.keys.org_id,
      guardrailId: g,
      apiStyle: 'chat',
      streamed: false,
      status: 200,
      latencyMs: 1,
      cost: 2,
      isByok: true,
    });
    const k = (await gw.call('POST', '/keys', { body: { name: 'byok' } })).body.key as string;
    await assignKey(g, k);
    assert.equal((await ask(gw, k)).status, 200);
    await gw.call('PATCH', '/workspaces/default', { body: { include_byok_in_budgets: true } });
    assert.equal((await ask(gw, k)).status, 402);
    await gw.call('PATCH', '/workspaces/default', { body: { include_byok_in_budgets: false } });
    assert.equal((await ask(gw, k)).status, 200);
    await gw.call('PATCH', `/guardrails/${g}`, { body: { include_byok_in_budgets: true } });
    assert.equal((await ask(gw, k)).status, 402);
  });

  test('hostile: a capped member cannot escape through an intern, its own key, or another guardrail', async () => {
    const db = gw.ctx.store.db;
    const mallory = await createUser(db, { name: 'mallory' });
    await addMember(db, { orgId: gw.keys.org_id, userId: mallory.id });
    const own = await createKey(db, { orgId: gw.keys.org_id, creatorUserId: mallory.id, kind: 'standard' });
    const capped = await guardrail({ limit_usd: 1 });
    await gw.call('POST', `/guardrails/${capped}/assignments/members`, { body: { member_user_ids: [mallory.id] } });
    await db.insert(inferenceRequests).values({
      id: randomUUID(),
      orgId: gw.keys.org_id,
      guardrailId: capped,
      apiStyle: 'chat',
      streamed: false,
      status: 200,
      latencyMs: 1,
      cost: 1,
    });
    assert.equal((await ask(gw, own.raw)).status, 402);
    // an intern made with that key makes its model requests under the same guardrail
    const internKey = await createKey(db, { orgId: gw.keys.org_id, creatorUserId: mallory.id, kind: 'standard' });
    await db.insert(interns).values({
      id: randomUUID(),
      orgId: gw.keys.org_id,
      workspaceId: gw.keys.workspace_id,
      creatorUserId: mallory.id,
      name: 'escape',
      apiKeyId: internKey.key.id,
      creatorKeyId: own.key.id,
    });
    assert.equal((await ask(gw, internKey.raw)).status, 402);
    // its own key cannot lift the guardrail, move itself to another, or read the others
    const open = await guardrail({ limit_usd: 1000 });
    const forbidden = { error: { code: 403, message: 'only management keys can perform this operation' } };
    for (const [method, path, body] of [
      ['POST', `/guardrails/${open}/assignments/keys`, { key_hashes: [own.key.hash] }],
      ['POST', `/guardrails/${open}/assignments/members`, { member_user_ids: [mallory.id] }],
      ['POST', `/guardrails/${capped}/assignments/members/remove`, { member_user_ids: [mallory.id] }],
      ['PATCH', `/guardrails/${capped}`, { limit_usd: 1000 }],
      ['PATCH', `/keys/${own.key.hash}`, { limit: 1000 }],
      ['PATCH', '/workspaces/default', { default_guardrail_id: open }],
      ['GET', '/guardrails', undefined],
    ] as const) {
      assert.deepEqual((await gw.call(method, path, { key: own.raw, body })).body, forbidden, `${method} ${path}`);
    }
    assert.equal((await ask(gw, own.raw)).status, 402);
    assert.equal((await ask(gw, internKey.raw)).status, 402);
  });
});
