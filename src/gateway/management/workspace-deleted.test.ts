// A deleted workspace, as the keys that acted in it see it (docs/reference/api.md#workspaces): the documented
// 400 at once in the gateway that deleted it (its cached key resolutions are dropped), and the same
// 400, never a 500 from a foreign key, where a resolution is stale or a delete races an insert.
// BYOK without `workspace_id` goes to the account's default workspace, whatever the key's own.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import pg from 'pg';
import { postgresUrl, startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { addMember, createKey, createOrganization, createUser, setDefaultWorkspace } from '../access/identity-store.ts';
import { createWorkspace } from './workspaces.ts';
import { waitForValue } from '../../../test/helpers/wait.ts';
import { workspaces } from '../store/schema.ts';

const DEFAULT_GONE = {
  error: {
    code: 400,
    message:
      "invalid request parameters: workspace_id: the account's default workspace was deleted, so workspace_id must be passed",
  },
};
const keyGone = (field: string) =>
  `invalid request parameters: ${field}: the key's workspace was deleted; use a key bound to an existing workspace`;
const NO_SUCH = {
  error: { code: 400, message: 'invalid request parameters: workspace_id: no such workspace in this account' },
};
const chat = { model: 'local/scripted', messages: [{ role: 'user', content: '/say hi' }] };

/** An account in the interns programme with a default workspace and `w2`; keys unbound (acting in the default) and bound to w2. */
async function account(gw: TestGateway, name: string) {
  const db = gw.ctx.store.db;
  const orgId = (await createOrganization(db, { name, internsProgramme: true })).id;
  const userId = (await createUser(db, { name })).id;
  await addMember(db, { orgId, userId });
  const defaultId = (await createWorkspace(db, { orgId, userId, body: { name: 'Default', slug: 'default' } })).id;
  await setDefaultWorkspace(db, { orgId, workspaceId: defaultId });
  const w2 = (await createWorkspace(db, { orgId, userId, body: { name: 'W2', slug: 'w2' } })).id;
  const key = async (kind: 'management' | 'standard', workspaceId?: string) =>
    (await createKey(db, { orgId, creatorUserId: userId, kind, workspaceId })).raw;
  return {
    defaultId,
    w2,
    mgmt: await key('management'),
    std: await key('standard'),
    w2Mgmt: await key('management', w2),
    w2Std: await key('standard', w2),
  };
}

/** Resolves (and so caches) each key in the gateway. */
async function warm(gw: TestGateway, ...keys: string[]) {
  for (const key of keys) assert.equal((await gw.call('GET', '/interns', { key })).status, 200);
}

for (const store of storeMatrix) {
  describe(`a deleted workspace (${store.name})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
    });
    after(() => gw.close());

    test("BYOK without workspace_id uses the account's default workspace, also for a key bound to another", async () => {
      const a = await account(gw, 'defaults');
      for (const key of [a.mgmt, a.w2Mgmt]) {
        const res = await gw.call('POST', '/byok', { key, body: { key: 'sk-default-0000000000', provider: 'openai' } });
        assert.equal(res.status, 201);
        assert.equal(res.body.data.workspace_id, a.defaultId);
      }
      const listed = await gw.call('GET', '/byok', { key: a.w2Mgmt });
      assert.deepEqual(
        [
          listed.status,
          listed.body.total_count,
          ...listed.body.data.map((c: { workspace_id: string }) => c.workspace_id),
        ],
        [200, 2, a.defaultId, a.defaultId],
      );
      // A management key may name any workspace of its account, so the default is no exception for a bound one.
      const named = await gw.call('POST', '/byok', {
        key: a.mgmt,
        body: { key: 'sk-w2-000000000000', provider: 'openai', workspace_id: a.w2 },
      });
      assert.equal(named.body.data.workspace_id, a.w2);
      assert.equal((await gw.call('GET', `/byok?workspace_id=${a.w2}`, { key: a.w2Mgmt })).body.total_count, 1);
    });

    test('the default deleted: every route that would act in it gives its 400 at once in this gateway', async () => {
      const a = await account(gw, 'deleted-default');
      await warm(gw, a.mgmt, a.std, a.w2Mgmt, a.w2Std);
      assert.deepEqual((await gw.call('DELETE', '/workspaces/default', { key: a.mgmt })).body, { deleted: true });

      for (const key of [a.mgmt, a.w2Mgmt]) {
        assert.deepEqual(
          await gw
            .call('POST', '/byok', { key, body: { key: 'sk-x-0000000000', provider: 'openai' } })
            .then((r) => [r.status, r.body]),
          [400, DEFAULT_GONE],
        );
        assert.deepEqual(await gw.call('GET', '/byok', { key }).then((r) => [r.status, r.body]), [400, DEFAULT_GONE]);
      }
      const preset = await gw.call('POST', '/presets/after-del/messages', { key: a.mgmt, body: { model: 'a/b' } });
      assert.deepEqual([preset.status, preset.body], [400, { error: { code: 400, message: keyGone('workspace') } }]);
      const intern = await gw.call('POST', '/interns', { key: a.mgmt, body: { name: 'late' } });
      assert.deepEqual([intern.status, intern.body.error.message], [400, keyGone('workspace_id')]);
      const model = await gw.call('POST', '/chat/completions', { key: a.std, body: chat });
      assert.deepEqual(
        [model.status, model.body],
        [
          400,
          {
            error: { code: 400, message: keyGone('workspace'), metadata: { reason: 'bad_request', retryable: false } },
          },
        ],
      );

      // Keys bound to w2 carry on there; workspace_id named explicitly still works.
      assert.equal(
        (await gw.call('POST', '/presets/after-del/messages', { key: a.w2Mgmt, body: { model: 'a/b' } })).body.data
          .workspace_id,
        a.w2,
      );
      assert.equal((await gw.call('POST', '/chat/completions', { key: a.w2Std, body: chat })).status, 200);
      const named = await gw.call('POST', '/byok', {
        key: a.mgmt,
        body: { key: 'sk-x-0000000000', provider: 'openai', workspace_id: a.w2 },
      });
      assert.deepEqual([named.status, named.body.data.workspace_id], [201, a.w2]);
    });

    test('keys bound to a deleted workspace are revoked with it; a workspace holding interns is 409 until they are gone', async () => {
      const a = await account(gw, 'bound');
      const intern = await gw.call('POST', '/interns', { key: a.w2Std, body: { name: 'resident' } });
      assert.equal(intern.status, 201);
      const refused = await gw.call('DELETE', '/workspaces/w2', { key: a.mgmt });
      assert.deepEqual(
        [refused.status, refused.body],
        [
          409,
          { error: { code: 409, message: 'resource conflict: the workspace still has 1 intern; delete it first' } },
        ],
      );
      assert.equal((await gw.call('GET', '/workspaces/w2', { key: a.mgmt })).status, 200, 'nothing was deleted');
      assert.equal((await gw.call('GET', '/interns', { key: a.w2Std })).status, 200, 'nor any key revoked');

      assert.equal((await gw.call('DELETE', `/interns/${intern.body.id}`, { key: a.w2Std })).status, 202);
      await gw.ctx.interns.idle();
      assert.deepEqual((await gw.call('DELETE', '/workspaces/w2', { key: a.mgmt })).body, { deleted: true });
      // At once, in the gateway that deleted it: the keys bound to w2 are revoked, not moved to the default.
      for (const key of [a.w2Std, a.w2Mgmt]) {
        assert.deepEqual(await gw.call('GET', '/interns', { key }).then((r) => [r.status, r.body]), [
          401,
          { error: { code: 401, message: 'invalid or revoked API key' } },
        ]);
      }
      assert.equal(
        (await gw.call('GET', '/interns', { key: a.std })).status,
        200,
        'unbound keys act in the default as before',
      );
    });

    test('a stale resolution (the workspace deleted behind the cache): 400 from every insert, not a 500', async () => {
      const a = await account(gw, 'stale');
      await warm(gw, a.mgmt, a.w2Mgmt, a.w2Std);
      // As another gateway without Redis would: the rows go, this gateway's key cache is not told.
      await gw.ctx.store.db.delete(workspaces).where(eq(workspaces.id, a.w2));
      await gw.ctx.store.db.delete(workspaces).where(eq(workspaces.id, a.defaultId));

      const preset = await gw.call('POST', '/presets/stale/messages', { key: a.w2Mgmt, body: { model: 'a/b' } });
      assert.deepEqual([preset.status, preset.body], [400, { error: { code: 400, message: keyGone('workspace') } }]);
      const intern = await gw.call('POST', '/interns', { key: a.w2Mgmt, body: { name: 'stale' } });
      assert.deepEqual([intern.status, intern.body.error.message], [400, keyGone('workspace_id')]);
      const model = await gw.call('POST', '/chat/completions', { key: a.w2Std, body: chat });
      assert.deepEqual([model.status, model.body.error.message], [400, keyGone('workspace')]);
      // BYOK reads the default from the store (here it still names the deleted row), not from the cache.
      assert.deepEqual(
        await gw
          .call('POST', '/byok', { key: a.mgmt, body: { key: 'sk-x-0000000000', provider: 'openai' } })
          .then((r) => [r.status, r.body]),
        [400, DEFAULT_GONE],
      );
      assert.deepEqual(
        await gw
          .call('POST', '/byok', {
            key: a.mgmt,
            body: { key: 'sk-x-0000000000', provider: 'openai', workspace_id: a.w2 },
          })
          .then((r) => [r.status, r.body]),
        [400, NO_SUCH],
      );
    });
  });
}

// A delete committed while a BYOK insert waits on the workspace row: the insert's foreign-key check
// fails, which PostgreSQL alone can show (PGlite runs one statement at a time).
describe('a workspace deleted during a BYOK insert (postgres)', {
  skip: postgresUrl ? false : 'DATABASE_URL is not set',
}, () => {
  let gw: TestGateway;
  let client: pg.Client;
  before(async () => {
    gw = await startTestGateway({ postgres: true });
    client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    await client.query(`set search_path to ${gw.pgSchema}`);
  });
  after(async () => {
    await client.end();
    await gw.close();
  });

  test("the insert's foreign-key violation is the documented 400", async () => {
    const a = await account(gw, 'race');
    await warm(gw, a.mgmt);
    await client.query('begin');
    // What DELETE /workspaces does, left uncommitted: the row stays visible to the request's reads and locked for its insert.
    await client.query('delete from workspaces where id = $1', [a.defaultId]);
    await client.query('update organizations set default_workspace_id = null where default_workspace_id = $1', [
      a.defaultId,
    ]);
    const pending = gw.call('POST', '/byok', { key: a.mgmt, body: { key: 'sk-race-0000000000', provider: 'openai' } });
    // Reads never wait on a writer, so a request blocked by this transaction is at its insert's
    // foreign-key check (pg_stat_activity's query text can lag behind the statement it runs).
    const waiting = await waitForValue(
      'the insert waits on the deleted row',
      async () =>
        (
          await client.query(
            'select count(*)::int as n from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))',
          )
        ).rows[0].n as number,
      (n) => n > 0,
      { timeoutMs: 2_000, everyMs: 10 },
    );
    assert.equal(waiting, 1, 'the insert waits on the deleted row');
    await client.query('commit');
    const res = await pending;
    assert.deepEqual([res.status, res.body], [400, DEFAULT_GONE]);
  });
});

// Two gateways on one PostgreSQL and one Redis, trusting a resolved key for an hour: a workspace
// deleted through one drops, in the other, the resolutions of the keys acting in it and no others.
const busSkip = !postgresUrl ? 'DATABASE_URL is not set' : !process.env.REDIS_URL ? 'REDIS_URL is not set' : false;
describe('a deleted workspace across gateways', { skip: busSkip }, () => {
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    const env = { REDIS_URL: process.env.REDIS_URL!, COHORT_KEY_CACHE_MS: '3600000' };
    a = await startTestGateway({ postgres: true, env });
    b = await startTestGateway({ pgSchema: a.pgSchema, keys: a.keys, env });
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  test("the other gateway drops the deleted workspace's key resolutions promptly", async () => {
    const acc = await account(a, 'bus');
    await warm(b, acc.mgmt, acc.std, acc.w2Std);
    const cached = (key: string) => b.ctx.auth.known(`Bearer ${key}`) !== undefined;
    assert.deepEqual([cached(acc.mgmt), cached(acc.std), cached(acc.w2Std)], [true, true, true]);
    assert.equal((await a.call('DELETE', '/workspaces/default', { key: acc.mgmt })).status, 200);
    const kept = await waitForValue(
      "B dropped the deleted workspace's keys",
      () => [cached(acc.mgmt), cached(acc.std), cached(acc.w2Std)],
      ([mgmt, std]) => !mgmt && !std,
      { timeoutMs: 1_000, everyMs: 10 },
    );
    assert.deepEqual(kept, [false, false, true]);
    const res = await b.call('POST', '/presets/via-b/messages', { key: acc.mgmt, body: { model: 'a/b' } });
    assert.deepEqual([res.status, res.body.error.message], [400, keyGone('workspace')]);
  });
});
