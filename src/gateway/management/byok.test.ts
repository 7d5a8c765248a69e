import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { count } from 'drizzle-orm';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { ByokCredential } from './byok.schemas.ts';
import { byokCredentials } from '../store/schema.ts';
import { hashKey } from '../crypto/keys.ts';

const RAW = 'sk-proj-0123456789abcdefghijKLMNOPQRSTUV';

for (const store of storeMatrix) {
  describe(`byok (${store.name})`, () => {
    let gw: TestGateway;
    let other: TestAccount;
    let mgmtHash: string;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      other = await createTestAccount(gw.ctx.store.db, { name: 'other' });
      mgmtHash = hashKey(gw.keys.management_key);
    });
    after(() => gw.close());

    const rows = async () => (await gw.ctx.store.db.select({ n: count() }).from(byokCredentials))[0]!.n;

    test('create returns 201 with the defaults, a masked label and no key', async () => {
      const res = await gw.call('POST', '/byok', { body: { key: RAW, provider: 'openai' } });
      assert.equal(res.status, 201);
      const c = ByokCredential.strict().parse(res.body.data);
      assert.deepEqual(
        { ...c, id: '', created_at: '' },
        {
          id: '',
          created_at: '',
          name: null,
          provider: 'openai',
          label: 'sk-pro...STUV',
          workspace_id: gw.keys.workspace_id,
          disabled: false,
          is_byok_only: false,
          is_fallback: false,
          is_required: false,
          declared_zdr: null,
          sort_order: 0,
          allowed_api_key_hashes: null,
          allowed_models: null,
          allowed_user_ids: null,
        },
      );
      assert.ok(!JSON.stringify(res.body).includes(RAW));
    });

    test('every field is stored; sort_order defaults to the next in workspace and provider', async () => {
      const body = {
        key: 'sk-second-key-abcdefghijklmnop',
        provider: 'openai',
        name: 'n'.repeat(255),
        workspace_id: gw.keys.workspace_id.toUpperCase(),
        allowed_api_key_hashes: [mgmtHash],
        allowed_models: ['openai/gpt-4o'],
        allowed_user_ids: ['user-1'],
        declared_zdr: true,
        disabled: true,
        is_fallback: true,
        is_required: true,
      };
      const res = await gw.call('POST', '/byok', { body });
      assert.equal(res.status, 201);
      const c = res.body.data as ByokCredential;
      assert.equal(c.sort_order, 1);
      assert.equal(c.workspace_id, gw.keys.workspace_id);
      assert.deepEqual(c.allowed_api_key_hashes, [mgmtHash]);
      assert.deepEqual(
        [c.declared_zdr, c.disabled, c.is_fallback, c.is_required, c.is_byok_only],
        [true, true, true, true, false],
      );
      const third = await gw.call('POST', '/byok', {
        body: { key: 'anthropic-key-000000000', provider: 'anthropic', sort_order: 7 },
      });
      assert.equal(third.body.data.sort_order, 7);
    });

    test('rule violations are 400 naming the field and write nothing', async () => {
      const before = await rows();
      const hex = (c: string) => c.repeat(64);
      const cases: [unknown, string][] = [
        [{ provider: 'openai' }, 'key'],
        [{ key: '', provider: 'openai' }, 'key'],
        [{ key: 'k', provider: 'not-a-provider' }, 'provider'],
        [{ key: 'k', provider: 'openai', name: 'n'.repeat(256) }, 'name'],
        [{ key: 'k', provider: 'openai', allowed_api_key_hashes: [] }, 'allowed_api_key_hashes'],
        [{ key: 'k', provider: 'openai', allowed_api_key_hashes: Array(101).fill(mgmtHash) }, 'allowed_api_key_hashes'],
        [{ key: 'k', provider: 'openai', allowed_api_key_hashes: [hex('A')] }, 'allowed_api_key_hashes.0'],
        [{ key: 'k', provider: 'openai', allowed_api_key_hashes: [mgmtHash, hex('a')] }, 'allowed_api_key_hashes.1'],
        [{ key: 'k', provider: 'openai', allowed_api_key_hashes: [other.apiKeyHash] }, 'allowed_api_key_hashes.0'],
        [{ key: 'k', provider: 'openai', allowed_models: Array(101).fill('a/b') }, 'allowed_models'],
        [{ key: 'k', provider: 'openai', allowed_user_ids: Array(101).fill('u') }, 'allowed_user_ids'],
        [{ key: 'k', provider: 'openai', is_byok_only: true, is_fallback: true }, 'is_byok_only'],
        [{ key: 'k', provider: 'openai', workspace_id: 'not-a-uuid' }, 'workspace_id'],
        [{ key: 'k', provider: 'openai', workspace_id: other.workspaceId }, 'workspace_id'],
        [{ key: 'k', provider: 'openai', declared_zdr: 'yes' }, 'declared_zdr'],
        [{ key: 'k', provider: 'openai', sort_order: -1 }, 'sort_order'],
        [{ key: 'k', provider: 'openai', label: 'mine' }, 'label'],
      ];
      for (const [body, field] of cases) {
        const res = await gw.call('POST', '/byok', { body });
        assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
        assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
        assert.ok(res.body.error.message.startsWith(`invalid request parameters: ${field}`), res.body.error.message);
      }
      assert.equal(await rows(), before);
    });

    test('list filters by workspace and provider; get, patch, delete', async () => {
      const list = await gw.call('GET', '/byok');
      assert.equal(list.status, 200);
      assert.equal(list.body.total_count, 3);
      const openai = await gw.call('GET', `/byok?provider=openai&workspace_id=${gw.keys.workspace_id}`);
      assert.deepEqual(
        openai.body.data.map((c: ByokCredential) => c.sort_order),
        [0, 1],
      );
      assert.equal((await gw.call('GET', `/byok?workspace_id=${other.workspaceId}`)).body.total_count, 0);
      assert.equal((await gw.call('GET', '/byok?workspace_id=nope')).status, 400);
      const id = openai.body.data[0].id as string;
      assert.equal((await gw.call('GET', `/byok/${id}`)).body.data.label, 'sk-pro...STUV');

      const patched = await gw.call('PATCH', `/byok/${id}`, {
        body: { name: 'primary', is_byok_only: true, sort_order: 5, key: 'sk-rotated-abcdefghijklmnopqr' },
      });
      assert.equal(patched.status, 200);
      assert.deepEqual(
        [patched.body.data.name, patched.body.data.is_byok_only, patched.body.data.sort_order, patched.body.data.label],
        ['primary', true, 5, 'sk-rot...opqr'],
      );
      const clash = await gw.call('PATCH', `/byok/${id}`, { body: { is_fallback: true } });
      assert.equal(clash.status, 400);
      assert.match(clash.body.error.message, /^invalid request parameters: is_byok_only: /);
      assert.equal((await gw.call('PATCH', `/byok/${id}`, { body: { provider: 'anthropic' } })).status, 400);
      assert.equal(
        (await gw.call('PATCH', `/byok/${id}`, { body: { allowed_api_key_hashes: [other.apiKeyHash] } })).status,
        400,
      );
      const cleared = await gw.call('PATCH', `/byok/${id}`, { body: { allowed_models: null, name: null } });
      assert.deepEqual([cleared.body.data.allowed_models, cleared.body.data.name], [null, null]);

      assert.deepEqual((await gw.call('GET', '/byok/not-a-uuid')).body.error.code, 400);
      assert.deepEqual((await gw.call('GET', '/byok/00000000-0000-4000-8000-000000000000')).body, {
        error: { code: 404, message: 'resource not found: credential' },
      });
      assert.deepEqual((await gw.call('DELETE', `/byok/${id}`)).body, { deleted: true });
      assert.equal((await gw.call('GET', `/byok/${id}`)).status, 404);
      assert.equal((await gw.call('DELETE', `/byok/${id}`)).status, 404);
    });

    test("another account's credential is 404 for get, patch and delete", async () => {
      const theirs = await gw.call('POST', '/byok', {
        key: other.managementKey,
        body: { key: 'their-key-0000000000', provider: 'groq' },
      });
      assert.equal(theirs.status, 201);
      assert.equal(theirs.body.data.workspace_id, other.workspaceId);
      const id = theirs.body.data.id;
      assert.equal((await gw.call('GET', `/byok/${id}`)).status, 404);
      assert.equal((await gw.call('PATCH', `/byok/${id}`, { body: { name: 'x' } })).status, 404);
      assert.equal((await gw.call('DELETE', `/byok/${id}`)).status, 404);
      assert.equal((await gw.call('GET', `/byok/${id}`, { key: other.managementKey })).status, 200);
    });

    test('a deleted default workspace: create and list need workspace_id (400), with it they work', async () => {
      const ws = await gw.call('POST', '/workspaces', { body: { name: 'Spare', slug: 'spare' } });
      assert.equal((await gw.call('DELETE', `/workspaces/${gw.keys.workspace_id}`)).status, 200);
      // At once: the delete dropped this gateway's cached resolution of the key.
      const gone = {
        error: {
          code: 400,
          message:
            "invalid request parameters: workspace_id: the account's default workspace was deleted, so workspace_id must be passed",
        },
      };
      const res = await gw.call('POST', '/byok', { body: { key: 'k-000000000000', provider: 'openai' } });
      assert.deepEqual([res.status, res.body], [400, gone]);
      const list = await gw.call('GET', '/byok');
      assert.deepEqual([list.status, list.body], [400, gone]);
      const ok = await gw.call('POST', '/byok', {
        body: { key: 'k-000000000000', provider: 'openai', workspace_id: ws.body.data.id },
      });
      assert.equal(ok.status, 201);
      assert.equal(ok.body.data.sort_order, 0);
      assert.equal((await gw.call('GET', `/byok?workspace_id=${ws.body.data.id}`)).body.total_count, 1);
      assert.equal(
        (await gw.call('GET', `/byok?workspace_id=${gw.keys.workspace_id}`)).body.total_count,
        0,
        'credentials went with their workspace',
      );
    });
  });
}
