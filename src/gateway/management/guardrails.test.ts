// Guardrails over the API on both stores: each route's statuses and bodies, assignments (and the
// one-guardrail rule), the workspace default, fields not built refused, and what an ordinary key
// or another account must not do.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { hashKey } from '../crypto/keys.ts';
import { Guardrail } from './guardrails.schemas.ts';

for (const store of storeMatrix) {
  describe(`guardrails API (${store.name})`, () => {
    let gw: TestGateway;
    let other: TestAccount;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      other = await createTestAccount(gw.ctx.store.db, { name: 'other' });
    });
    after(() => gw.close());

    test('create, get, list, update and delete', async () => {
      const res = await gw.call('POST', '/guardrails', {
        body: {
          name: 'team',
          limit_usd: 25,
          reset_interval: 'weekly',
          allowed_models: ['local/scripted', 'local/scripted'],
          ignored_providers: ['groq'],
          enforce_zdr: true,
          workspace_id: gw.keys.workspace_id,
        },
      });
      assert.equal(res.status, 201);
      const g = Guardrail.parse(res.body.data);
      assert.deepEqual(
        { ...g, id: undefined, created_at: undefined },
        {
          id: undefined,
          name: 'team',
          description: null,
          limit_usd: 25,
          reset_interval: 'weekly',
          include_byok_in_budgets: false,
          allowed_models: ['local/scripted'],
          ignored_models: null,
          allowed_providers: null,
          ignored_providers: ['groq'],
          enforce_zdr: true,
          workspace_id: gw.keys.workspace_id,
          created_at: undefined,
          updated_at: null,
        },
      );
      assert.deepEqual((await gw.call('GET', `/guardrails/${g.id}`)).body, { data: g });
      const list = await gw.call('GET', '/guardrails');
      assert.equal(list.body.total_count, 1);
      assert.deepEqual(list.body.data, [g]);
      const up = await gw.call('PATCH', `/guardrails/${g.id}`, { body: { limit_usd: null, description: 'd' } });
      assert.equal(up.status, 200);
      assert.equal(up.body.data.limit_usd, null);
      assert.equal(up.body.data.reset_interval, null, 'no limit, no reset');
      assert.equal(up.body.data.description, 'd');
      assert.match(up.body.data.updated_at, /^\d{4}-/);
      assert.deepEqual((await gw.call('DELETE', `/guardrails/${g.id}`)).body, { deleted: true });
      assert.deepEqual((await gw.call('GET', `/guardrails/${g.id}`)).body, {
        error: { code: 404, message: 'resource not found: guardrail' },
      });
      assert.equal((await gw.call('PATCH', `/guardrails/${g.id}`, { body: { name: 'x' } })).status, 404);
      assert.equal((await gw.call('DELETE', `/guardrails/${g.id}`)).status, 404);
      assert.equal((await gw.call('GET', '/guardrails/not-a-uuid')).status, 404);
    });

    test('bad input is 400 naming the field; settings not built are refused, and nothing is written', async () => {
      const cases: [unknown, string][] = [
        [{}, 'name'],
        [{ name: 'x', limit_usd: -1 }, 'limit_usd'],
        [{ name: 'x', limit_usd: 1e9 }, 'limit_usd'],
        [{ name: 'x', limit_usd: 1, reset_interval: 'yearly' }, 'reset_interval'],
        [{ name: 'x', reset_interval: 'daily' }, 'reset_interval'],
        [{ name: 'x', allowed_models: 'local/scripted' }, 'allowed_models'],
        [{ name: 'x', workspace_id: other.workspaceId }, 'workspace_id'],
        [{ name: 'x', allowed_data_regions: ['eu'] }, 'allowed_data_regions: not built yet'],
        [{ name: 'x', enforce_zdr_openai: true }, 'enforce_zdr_openai: not built yet'],
        [{ name: 'x', content_filters: [{ pattern: 'x' }] }, 'content_filters: not built yet'],
        [{ name: 'x', surprise: 1 }, 'surprise'],
      ];
      for (const [body, field] of cases) {
        const res = await gw.call('POST', '/guardrails', { body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(
          res.body.error.message,
          new RegExp(`^invalid request parameters: .*${field}`),
          JSON.stringify(body),
        );
      }
      assert.equal((await gw.call('GET', '/guardrails')).body.total_count, 0);
      // settings that ask for nothing are accepted
      const ok = await gw.call('POST', '/guardrails', {
        body: { name: 'plain', allowed_data_regions: [], enforce_zdr_openai: false, content_filters: null },
      });
      assert.equal(ok.status, 201);
      await gw.call('DELETE', `/guardrails/${ok.body.data.id}`);
    });

    test('assignments of keys and members: listed, moved (one guardrail a key), removed; unknown ones 400', async () => {
      const a = (await gw.call('POST', '/guardrails', { body: { name: 'a' } })).body.data.id;
      const b = (await gw.call('POST', '/guardrails', { body: { name: 'b' } })).body.data.id;
      const hash = hashKey(gw.keys.api_key);
      const assign = await gw.call('POST', `/guardrails/${a}/assignments/keys`, { body: { key_hashes: [hash, hash] } });
      assert.deepEqual([assign.status, assign.body], [200, { assigned_count: 1 }]);
      const listA = await gw.call('GET', `/guardrails/${a}/assignments/keys`);
      assert.equal(listA.body.total_count, 1);
      assert.deepEqual(
        { ...listA.body.data[0], id: undefined, created_at: undefined },
        {
          id: undefined,
          guardrail_id: a,
          key_hash: hash,
          key_label: listA.body.data[0].key_label,
          key_name: 'bootstrap key',
          assigned_by: gw.keys.user_id,
          created_at: undefined,
        },
      );
      // assigning the key to b moves it: a key has one guardrail
      await gw.call('POST', `/guardrails/${b}/assignments/keys`, { body: { key_hashes: [hash] } });
      assert.equal((await gw.call('GET', `/guardrails/${a}/assignments/keys`)).body.total_count, 0);
      assert.equal((await gw.call('GET', `/guardrails/${b}/assignments/keys`)).body.total_count, 1);
      // the account-wide list holds it; another account's is empty
      const all = await gw.call('GET', '/guardrails/assignments/keys');
      assert.deepEqual([all.body.total_count, all.body.data[0].key_hash, all.body.data[0].guardrail_id], [1, hash, b]);
      assert.equal(
        (await gw.call('GET', '/guardrails/assignments/keys', { key: other.managementKey })).body.total_count,
        0,
      );
      const removed = await gw.call('POST', `/guardrails/${b}/assignments/keys/remove`, {
        body: { key_hashes: [hash] },
      });
      assert.deepEqual(removed.body, { unassigned_count: 1 });
      const unknown = await gw.call('POST', `/guardrails/${a}/assignments/keys`, {
        body: { key_hashes: [hash, other.apiKeyHash] },
      });
      assert.equal(unknown.status, 400);
      assert.match(
        unknown.body.error.message,
        /^invalid request parameters: key_hashes: no key of the account has hash/,
      );
      assert.equal((await gw.call('GET', `/guardrails/${a}/assignments/keys`)).body.total_count, 0, 'nothing written');
      const members = await gw.call('POST', `/guardrails/${a}/assignments/members`, {
        body: { member_user_ids: [gw.keys.user_id] },
      });
      assert.deepEqual(members.body, { assigned_count: 1 });
      const ml = await gw.call('GET', `/guardrails/${a}/assignments/members`);
      assert.equal(ml.body.data[0].user_id, gw.keys.user_id);
      assert.deepEqual((await gw.call('GET', '/guardrails/assignments/members')).body, ml.body);
      assert.equal(ml.body.data[0].organization_id, gw.keys.org_id);
      const stranger = await gw.call('POST', `/guardrails/${a}/assignments/members`, {
        body: { member_user_ids: [other.userId] },
      });
      assert.equal(stranger.status, 400);
      assert.match(stranger.body.error.message, /member_user_ids: .* is not a current member/);
      assert.deepEqual(
        (
          await gw.call('POST', `/guardrails/${a}/assignments/members/remove`, {
            body: { member_user_ids: [gw.keys.user_id] },
          })
        ).body,
        { unassigned_count: 1 },
      );
      await gw.call('DELETE', `/guardrails/${a}`);
      await gw.call('DELETE', `/guardrails/${b}`);
    });

    test("a workspace's default guardrail: set, shown, refused when not the account's, cleared by its delete", async () => {
      const g = (await gw.call('POST', '/guardrails', { body: { name: 'default' } })).body.data.id;
      const before = (await gw.call('GET', '/workspaces/default')).body.data.default_guardrail_id;
      assert.notEqual(before, g);
      const set = await gw.call('PATCH', '/workspaces/default', { body: { default_guardrail_id: g } });
      assert.equal(set.status, 200);
      assert.equal(set.body.data.default_guardrail_id, g);
      const theirs = (await gw.call('POST', '/guardrails', { key: other.managementKey, body: { name: 'theirs' } })).body
        .data.id;
      const refused = await gw.call('PATCH', '/workspaces/default', { body: { default_guardrail_id: theirs } });
      assert.equal(refused.status, 400);
      assert.match(refused.body.error.message, /default_guardrail_id/);
      await gw.call('DELETE', `/guardrails/${g}`);
      assert.equal((await gw.call('GET', '/workspaces/default')).body.data.default_guardrail_id, before);
    });

    test('hostile: an ordinary key is 403 everywhere; another account sees 404 and changes nothing', async () => {
      const g = (await gw.call('POST', '/guardrails', { body: { name: 'mine', limit_usd: 1 } })).body.data.id;
      const key = gw.keys.api_key;
      const forbidden = { error: { code: 403, message: 'only management keys can perform this operation' } };
      assert.deepEqual((await gw.call('GET', '/guardrails', { key })).body, forbidden);
      assert.deepEqual((await gw.call('PATCH', `/guardrails/${g}`, { key, body: { limit_usd: 100 } })).body, forbidden);
      assert.deepEqual(
        (await gw.call('POST', `/guardrails/${g}/assignments/keys/remove`, { key, body: { key_hashes: ['x'] } })).body,
        forbidden,
      );
      const theirs = { key: other.managementKey };
      assert.equal((await gw.call('GET', `/guardrails/${g}`, theirs)).status, 404);
      assert.equal((await gw.call('PATCH', `/guardrails/${g}`, { ...theirs, body: { limit_usd: 100 } })).status, 404);
      assert.equal((await gw.call('DELETE', `/guardrails/${g}`, theirs)).status, 404);
      assert.equal(
        (
          await gw.call('POST', `/guardrails/${g}/assignments/keys`, {
            ...theirs,
            body: { key_hashes: [other.apiKeyHash] },
          })
        ).status,
        404,
      );
      assert.equal((await gw.call('GET', `/guardrails/${g}`)).body.data.limit_usd, 1);
    });
  });
}
