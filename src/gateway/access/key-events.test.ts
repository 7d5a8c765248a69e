// Two gateways on one PostgreSQL and one Redis, with a key cache far longer than the test: a
// revoke through one gateway's process, or through the CLI, makes the other refuse the key
// promptly, which only the invalidation channel can explain. Same for a departing creator.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../server.ts';
import { postgresUrl } from '../../../test/helpers/gateway.ts';
import { get, sharedStore, type SharedStore } from '../../../test/helpers/cli.ts';
import * as identity from './identity.ts';
import { waitForValue } from '../../../test/helpers/wait.ts';

const redisUrl = process.env.REDIS_URL;
const skip = !postgresUrl ? 'DATABASE_URL is not set' : !redisUrl ? 'REDIS_URL is not set' : false;
if (skip) process.stderr.write(`# cross-gateway key invalidation skipped: ${skip}\n`);

/** The status the gateway answers the key with, once it is `status` (within 5 s: promptly). */
const until = (gw: Gateway, key: string, status: number): Promise<number> =>
  waitForValue(
    `the gateway answers the key ${status}`,
    async () => (await get(gw, '/workspaces', key)).status,
    (s) => s === status,
    { timeoutMs: 5_000, everyMs: 25 },
  );

describe('key invalidation across gateways', { skip }, () => {
  let s: SharedStore;
  let a: Gateway;
  let b: Gateway;
  const env = { REDIS_URL: redisUrl!, COHORT_KEY_CACHE_MS: '3600000' };
  before(async () => {
    s = sharedStore('postgres');
    a = await s.gateway(env);
    b = await s.gateway(env);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await s?.cleanup();
  });

  /** A fresh management key of the bootstrap owner, resolved (and so cached) by both gateways. */
  async function cachedKey(userId = a.bootstrap!.user_id) {
    const { key, raw } = await identity.createKey(
      { db: a.ctx.store.db, announce: async () => {} },
      { orgId: a.bootstrap!.org_id, userId, management: true, actsAs: 'user' },
    );
    for (const gw of [a, b]) assert.equal((await get(gw, '/workspaces', raw)).status, 200);
    return { id: key.id, raw };
  }

  test('a revoke in one gateway process: that gateway refuses at once, the other promptly', async () => {
    const k = await cachedKey();
    await identity.revokeKey({ db: a.ctx.store.db, announce: (h) => a.ctx.auth.invalidate(h ?? undefined) }, k.id);
    assert.equal((await get(a, '/workspaces', k.raw)).status, 401);
    assert.equal(await until(b, k.raw, 401), 401);
  });

  test('a revoke through the CLI reaches both gateways', async () => {
    const k = await cachedKey();
    const r = await s.cli(['key', 'revoke', k.id, '--json'], { REDIS_URL: redisUrl! });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual([await until(a, k.raw, 401), await until(b, k.raw, 401)], [401, 401]);
  });

  test('a creator leaving through the CLI: their key is refused, a grant brings it back', async () => {
    const user = await identity.createUser(
      { db: a.ctx.store.db, announce: async () => {} },
      { name: 'leaver', internsProgramme: false, orgId: a.bootstrap!.org_id },
    );
    const k = await cachedKey(user.id);
    const cli = (...args: string[]) => s.cli([...args, '--json'], { REDIS_URL: redisUrl! });
    assert.equal((await cli('member', 'remove', a.bootstrap!.org_id, user.id)).code, 0);
    assert.deepEqual([await until(a, k.raw, 403), await until(b, k.raw, 403)], [403, 403]);
    assert.equal((await cli('key', 'grant', k.id)).code, 0);
    assert.deepEqual([await until(a, k.raw, 200), await until(b, k.raw, 200)], [200, 200]);
  });
});
