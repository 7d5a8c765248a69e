import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { MANAGEMENT_ROUTES } from '../../../test/helpers/management-routes.ts';
import { grantKey, removeMember } from '../access/identity-store.ts';

const DEPARTED = 'the member who created this key has left the organization and the key holds no grant';

for (const store of storeMatrix) {
  describe(`management routes: authentication (${store.name})`, () => {
    let gw: TestGateway;
    let colleague: TestAccount;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      colleague = await createTestAccount(gw.ctx.store.db, { name: 'colleague', orgId: gw.keys.org_id });
    });
    after(() => gw.close());

    const each = async (key: string | null, headers?: Record<string, string>) =>
      Promise.all(
        MANAGEMENT_ROUTES.map(async (r) => ({
          r,
          res: await gw.call(r.method, r.path({}), { key, headers, ...(r.body ? { body: {} } : {}) }),
        })),
      );

    test('no key is 401 "missing authentication header" on every route', async () => {
      for (const { r, res } of await each(null)) {
        assert.deepEqual(
          res.body,
          { error: { code: 401, message: 'missing authentication header' } },
          `${r.method} ${r.template}`,
        );
      }
    });

    test('an invalid key or a malformed header is 401 on every route', async () => {
      for (const { r, res } of await each('ck-not-a-real-key-0000000000000000000')) {
        assert.equal(res.status, 401, `${r.method} ${r.template}`);
        assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
      }
      for (const { res } of await each(null, { authorization: 'Basic dXNlcjpwYXNz' })) assert.equal(res.status, 401);
    });

    test('an ordinary key is 403 "only management keys can perform this operation" on every route', async () => {
      for (const { r, res } of await each(gw.keys.api_key)) {
        assert.deepEqual(
          res.body,
          { error: { code: 403, message: 'only management keys can perform this operation' } },
          `${r.method} ${r.template}`,
        );
      }
    });

    test('a management key whose creator left is 403 until it is granted', async () => {
      assert.equal((await gw.call('GET', '/workspaces', { key: colleague.managementKey })).status, 200);
      assert.equal(await removeMember(gw.ctx.store.db, { orgId: gw.keys.org_id, userId: colleague.userId }), true);
      gw.ctx.auth.invalidate();
      for (const { r, res } of await each(colleague.managementKey)) {
        assert.deepEqual(res.body, { error: { code: 403, message: DEPARTED } }, `${r.method} ${r.template}`);
      }
      assert.ok(await grantKey(gw.ctx.store.db, { id: colleague.managementKeyId, granted: true }));
      gw.ctx.auth.invalidate();
      const list = await gw.call('GET', '/workspaces', { key: colleague.managementKey });
      assert.equal(list.status, 200);
      assert.equal(
        (await gw.call('POST', '/presets/granted/messages', { key: colleague.managementKey, body: { model: 'a/b' } }))
          .status,
        200,
      );
    });

    test("another account's workspace, preset and credential are 404 by id or slug", async () => {
      const stranger = await createTestAccount(gw.ctx.store.db, { name: 'stranger' });
      const key = stranger.managementKey;
      const preset = await gw.call('POST', '/presets/secret-plan/messages', { key, body: { model: 'a/b' } });
      const cred = await gw.call('POST', '/byok', { key, body: { key: 'stranger-key-000000', provider: 'openai' } });
      assert.deepEqual([preset.status, cred.status], [200, 201]);
      const targets: [string, string, unknown?][] = [
        ['GET', `/workspaces/${stranger.workspaceId}`],
        ['PATCH', `/workspaces/${stranger.workspaceId}`, { name: 'mine now' }],
        ['DELETE', `/workspaces/${stranger.workspaceId}`],
        ['GET', '/presets/secret-plan'],
        ['GET', '/presets/secret-plan/versions'],
        ['GET', '/presets/secret-plan/versions/1'],
        ['GET', `/byok/${cred.body.data.id}`],
        ['PATCH', `/byok/${cred.body.data.id}`, { name: 'x' }],
        ['DELETE', `/byok/${cred.body.data.id}`],
      ];
      for (const [method, path, body] of targets) {
        const res = await gw.call(method, path, body === undefined ? {} : { body });
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
      }
      assert.equal((await gw.call('GET', `/workspaces/${stranger.workspaceId}`, { key })).body.data.name, 'Default');
      assert.equal((await gw.call('GET', '/presets/secret-plan', { key })).status, 200);
    });
  });
}
