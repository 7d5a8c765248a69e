// The keys API on both stores: each route's statuses and bodies, the secret shown once, usage from
// the request log, and what an ordinary key or another account's management key must not do.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { hashKey } from '../crypto/keys.ts';
import { inferenceRequests } from '../store/schema-inference.ts';
import { apiKeys } from '../store/schema.ts';
import { periodStart } from '../access/periods.ts';
import { Key } from './keys.schemas.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

for (const store of storeMatrix) {
  describe(`keys API (${store.name})`, () => {
    let gw: TestGateway;
    let other: TestAccount;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      other = await createTestAccount(gw.ctx.store.db, { name: 'other' });
    });
    after(() => gw.close());

    test('create answers 201 with the key once; the key works; list and get never show it', async () => {
      const res = await gw.call('POST', '/keys', {
        body: { name: 'ci', limit: 5, limit_reset: 'daily', include_byok_in_limit: true },
      });
      assert.equal(res.status, 201);
      assert.deepEqual(Object.keys(res.body).sort(), ['data', 'key']);
      const k = Key.parse(res.body.data);
      assert.equal(k.hash, hashKey(res.body.key));
      assert.equal(k.name, 'ci');
      assert.equal(k.limit, 5);
      assert.equal(k.limit_remaining, 5);
      assert.equal(k.limit_reset, 'daily');
      assert.equal(k.include_byok_in_limit, true);
      assert.equal(k.disabled, false);
      assert.equal(k.usage, 0);
      assert.equal(k.workspace_id, gw.keys.workspace_id);
      assert.equal(k.creator_user_id, gw.keys.user_id);
      assert.ok(!k.label.includes(res.body.key) && res.body.key.endsWith(k.label.slice(-4)));
      const me = await gw.call('GET', '/key', { key: res.body.key });
      assert.equal(me.status, 200);
      assert.equal(me.body.data.label, k.label);
      assert.equal(me.body.data.limit, 5);
      assert.equal(me.body.data.limit_remaining, 5);
      assert.equal(me.body.data.is_management_key, false);
      const list = await gw.call('GET', '/keys');
      assert.equal(list.status, 200);
      assert.ok(list.body.data.some((x: { hash: string }) => x.hash === k.hash));
      assert.ok(!JSON.stringify(list.body).includes(res.body.key));
      const got = await gw.call('GET', `/keys/${k.hash}`);
      assert.deepEqual(got.body, { data: k });
    });

    test('usage and remaining come from the request log: periods, and BYOK in or out of the limit', async () => {
      const made = await gw.call('POST', '/keys', { body: { name: 'spender', limit: 10, limit_reset: 'monthly' } });
      const hash = made.body.data.hash as string;
      const id = (await gw.ctx.store.db.select().from(apiKeys)).find((r) => r.hash === hash)!.id;
      const now = Date.now();
      const row = (cost: number, isByok: boolean, at: number) => ({
        id: randomUUID(),
        orgId: gw.keys.org_id,
        apiKeyId: id,
        chargedKeyId: id,
        apiStyle: 'chat' as const,
        streamed: false,
        status: 200,
        latencyMs: 1,
        cost,
        isByok,
        createdAt: new Date(at),
      });
      await gw.ctx.store.db.insert(inferenceRequests).values([
        row(1.5, false, now),
        row(2, true, now),
        // before this month: counted in all-time usage only
        row(4, false, periodStart('monthly', now) - 1000),
      ]);
      const k = (await gw.call('GET', `/keys/${hash}`)).body.data;
      assert.equal(k.usage, 5.5);
      assert.equal(k.usage_daily, 1.5);
      assert.equal(k.usage_monthly, 1.5);
      assert.equal(k.byok_usage, 2);
      assert.equal(k.byok_usage_monthly, 2);
      assert.equal(k.limit_remaining, 8.5);
      const byok = await gw.call('PATCH', `/keys/${hash}`, { body: { include_byok_in_limit: true } });
      assert.equal(byok.status, 200);
      assert.equal(byok.body.data.limit_remaining, 6.5);
      assert.match(byok.body.data.updated_at, /^\d{4}-/);
      const allTime = await gw.call('PATCH', `/keys/${hash}`, { body: { limit_reset: null } });
      assert.equal(allTime.body.data.limit_remaining, 2.5);
      const none = await gw.call('PATCH', `/keys/${hash}`, { body: { limit: null } });
      assert.equal(none.body.data.limit_remaining, null);
      assert.equal(none.body.data.limit_reset, null);
    });

    test('disable, enable and delete take effect at once', async () => {
      const made = await gw.call('POST', '/keys', { body: { name: 'flip' } });
      const { key } = made.body;
      const hash = made.body.data.hash;
      assert.equal((await gw.call('GET', '/key', { key })).status, 200);
      assert.equal((await gw.call('PATCH', `/keys/${hash}`, { body: { disabled: true } })).body.data.disabled, true);
      assert.equal((await gw.call('GET', '/key', { key })).status, 401);
      assert.equal(
        (await gw.call('GET', '/keys')).body.data.some((x: { hash: string }) => x.hash === hash),
        false,
      );
      assert.equal(
        (await gw.call('GET', '/keys?include_disabled=true')).body.data.some((x: { hash: string }) => x.hash === hash),
        true,
      );
      await gw.call('PATCH', `/keys/${hash}`, { body: { disabled: false } });
      assert.equal((await gw.call('GET', '/key', { key })).status, 200);
      assert.deepEqual((await gw.call('DELETE', `/keys/${hash}`)).body, { deleted: true });
      assert.equal((await gw.call('GET', '/key', { key })).status, 401);
      assert.deepEqual((await gw.call('GET', `/keys/${hash}`)).body, {
        error: { code: 404, message: 'resource not found: key' },
      });
      assert.equal((await gw.call('DELETE', `/keys/${hash}`)).status, 404);
    });

    test('an expired key is 401 from the moment it expires', async () => {
      const expiresAt = Date.now() + 1200;
      const made = await gw.call('POST', '/keys', {
        body: { name: 'brief', expires_at: new Date(expiresAt).toISOString() },
      });
      assert.equal(made.status, 201);
      assert.equal((await gw.call('GET', '/key', { key: made.body.key })).status, 200);
      // The expiry is what is measured: the clock passes it, then the key is refused.
      await waitFor('the key expires', () => Date.now() > expiresAt);
      assert.equal((await gw.call('GET', '/key', { key: made.body.key })).status, 401);
    });

    test('bad input is 400 naming the field, and nothing is written', async () => {
      const before = (await gw.call('GET', '/keys?include_disabled=true')).body.data.length;
      const cases: [unknown, string][] = [
        [{}, 'name'],
        [{ name: 'x', limit: -1 }, 'limit'],
        [{ name: 'x', limit: 1e12 }, 'limit'],
        [{ name: 'x', limit: 'lots' }, 'limit'],
        [{ name: 'x', limit: 1, limit_reset: 'hourly' }, 'limit_reset'],
        [{ name: 'x', limit_reset: 'daily' }, 'limit_reset'],
        [{ name: 'x', expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
        [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
        [{ name: 'x', workspace_id: other.workspaceId }, 'workspace_id'],
        [{ name: 'x', creator_user_id: other.userId }, 'creator_user_id'],
        [{ name: 'x', external: { user: 'u' } }, 'external'],
        [{ name: 'x', kind: 'management' }, 'kind'],
      ];
      for (const [body, field] of cases) {
        const res = await gw.call('POST', '/keys', { body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(
          res.body.error.message,
          new RegExp(`^invalid request parameters: .*${field}`),
          JSON.stringify(body),
        );
      }
      const hash = (await gw.call('GET', '/keys')).body.data[0].hash;
      for (const [body, field] of [
        [{ limit: -0.01 }, 'limit'],
        [{ disabled: 'yes' }, 'disabled'],
        [{ expires_at: null }, 'expires_at'],
      ] as const) {
        const res = await gw.call('PATCH', `/keys/${hash}`, { body });
        assert.equal(res.status, 400);
        assert.match(res.body.error.message, new RegExp(field));
      }
      assert.equal((await gw.call('GET', '/keys?include_disabled=true')).body.data.length, before);
    });

    test('hostile: an ordinary key can neither list, read nor raise its own limit; another account sees 404', async () => {
      const made = await gw.call('POST', '/keys', { body: { name: 'capped', limit: 1 } });
      const { key } = made.body;
      const hash = made.body.data.hash;
      const forbidden = { error: { code: 403, message: 'only management keys can perform this operation' } };
      assert.deepEqual((await gw.call('GET', '/keys', { key })).body, forbidden);
      assert.deepEqual((await gw.call('GET', `/keys/${gw.keys.management_key}`, { key })).body, forbidden);
      assert.deepEqual((await gw.call('PATCH', `/keys/${hash}`, { key, body: { limit: 1000 } })).body, forbidden);
      assert.deepEqual((await gw.call('POST', '/keys', { key, body: { name: 'mine' } })).body, forbidden);
      assert.deepEqual((await gw.call('DELETE', `/keys/${hashKey(gw.keys.api_key)}`, { key })).body, forbidden);
      assert.equal((await gw.call('GET', '/key', { key })).body.data.limit, 1);
      // another account's management key: the key is not found, nor changed
      const theirs = { key: other.managementKey };
      assert.equal((await gw.call('GET', `/keys/${hash}`, theirs)).status, 404);
      assert.equal((await gw.call('PATCH', `/keys/${hash}`, { ...theirs, body: { limit: 99 } })).status, 404);
      assert.equal((await gw.call('DELETE', `/keys/${hash}`, theirs)).status, 404);
      assert.ok(!(await gw.call('GET', '/keys', theirs)).body.data.some((x: { hash: string }) => x.hash === hash));
      assert.equal((await gw.call('GET', `/keys/${hash}`)).body.data.limit, 1);
      assert.equal((await gw.call('GET', '/key', { key })).status, 200);
    });
  });
}
