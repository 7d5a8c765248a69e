// Key resolution: lookup by hash, refusals, constant-time comparison, the cache's TTL and its
// invalidation on revoke, grant and membership changes (in this process).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, type Store } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { revokeKey as storeRevoke } from './identity-store.ts';
import { generateApiKey, hashKey } from '../crypto/keys.ts';
import { ApiError } from '../errors.ts';
import { seedIfEmpty, type Bootstrap } from './bootstrap.ts';
import { bearerToken, createAuthenticator } from './auth.ts';
import * as identity from './identity.ts';

async function refusal(p: Promise<unknown>) {
  const err = await p.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError);
  return { status: err.status, message: err.message };
}

test('bearerToken reads only a well-formed Bearer header', () => {
  const table: [string | undefined, string | null][] = [
    [undefined, null],
    ['', null],
    ['Bearer ck-abc', 'ck-abc'],
    ['bearer ck-abc ', 'ck-abc'],
    ['Basic ck-abc', null],
    ['Bearer', null],
    ['Bearer a b', null],
  ];
  for (const [header, token] of table) assert.equal(bearerToken(header), token, String(header));
});

describe('authenticator', () => {
  let store: Store;
  let keys: Bootstrap;
  let clock = 0;
  before(async () => {
    store = await openStore({});
    await migrate(store);
    keys = (await seedIfEmpty(store.db))!;
  });
  after(() => store.close());
  const auth = (ttlMs = 60_000) => createAuthenticator({ db: store.db, ttlMs, now: () => clock });

  test('a key resolves by its hash to its principal', async () => {
    const p = await auth().authenticate(`Bearer ${keys.management_key}`);
    assert.deepEqual(
      { ...p, keyId: typeof p.keyId, chargedKeyId: p.chargedKeyId === p.keyId },
      {
        keyId: 'string',
        keyHash: hashKey(keys.management_key),
        orgId: keys.org_id,
        kind: 'management',
        actsAs: 'user',
        userId: keys.user_id,
        subjectId: keys.user_id,
        workspaceId: keys.workspace_id,
        creatorDeparted: false,
        granted: false,
        internsProgramme: true,
        internId: null,
        internModel: null,
        expiresAt: null,
        budgets: [],
        chargedKeyId: true,
        guardrail: null,
      },
    );
    assert.equal((await auth().authenticate(`Bearer ${keys.api_key}`)).kind, 'standard');
  });

  test('no key, a malformed header and an unknown key are 401', async () => {
    const a = auth();
    assert.deepEqual(await refusal(a.authenticate(undefined)), {
      status: 401,
      message: 'missing authentication header',
    });
    assert.deepEqual(await refusal(a.authenticate(`Basic ${keys.api_key}`)), {
      status: 401,
      message: 'missing authentication header',
    });
    assert.deepEqual(await refusal(a.authenticate(`Bearer ${generateApiKey()}`)), {
      status: 401,
      message: 'invalid or revoked API key',
    });
  });

  test('a revoke through this process refuses the key at once; elsewhere the TTL bounds it', async () => {
    const admin = { db: store.db, announce: async () => {} };
    const one = await identity.createKey(admin, {
      orgId: keys.org_id,
      userId: keys.user_id,
      management: false,
      actsAs: 'user',
    });
    const two = await identity.createKey(admin, {
      orgId: keys.org_id,
      userId: keys.user_id,
      management: false,
      actsAs: 'user',
    });
    const a = auth(1_000);
    await a.authenticate(`Bearer ${one.raw}`);
    await a.authenticate(`Bearer ${two.raw}`);

    await identity.revokeKey({ db: store.db, announce: (h) => a.invalidate(h ?? undefined) }, one.key.id);
    assert.deepEqual(await refusal(a.authenticate(`Bearer ${one.raw}`)), {
      status: 401,
      message: 'invalid or revoked API key',
    });

    await storeRevoke(store.db, two.key.id); // as another process without a key bus would
    assert.equal((await a.authenticate(`Bearer ${two.raw}`)).keyId, two.key.id, 'cached until the TTL passes');
    clock += 1_001;
    assert.deepEqual(await refusal(a.authenticate(`Bearer ${two.raw}`)), {
      status: 401,
      message: 'invalid or revoked API key',
    });
  });

  test('membership and grant changes announced here change the principal at once', async () => {
    const a = auth();
    const admin = { db: store.db, announce: (h: string | null) => a.invalidate(h ?? undefined) };
    const u = await identity.createUser(admin, { name: 'leaver', internsProgramme: false, orgId: keys.org_id });
    const k = await identity.createKey(admin, {
      orgId: keys.org_id,
      userId: u.id,
      management: true,
      actsAs: 'organization',
    });
    const resolve = async () => {
      const p = await a.authenticate(`Bearer ${k.raw}`);
      return { departed: p.creatorDeparted, granted: p.granted, programme: p.internsProgramme, subject: p.subjectId };
    };
    assert.deepEqual(await resolve(), { departed: false, granted: false, programme: true, subject: keys.org_id });
    await identity.removeMember(admin, { orgId: keys.org_id, userId: u.id });
    assert.deepEqual(await resolve(), { departed: true, granted: false, programme: true, subject: keys.org_id });
    await identity.grantKey(admin, { id: k.key.id, granted: true });
    assert.deepEqual(await resolve(), { departed: true, granted: true, programme: true, subject: keys.org_id });
    await identity.setProgramme(admin, { orgId: keys.org_id, member: false });
    assert.deepEqual(await resolve(), { departed: true, granted: true, programme: false, subject: keys.org_id });
    await identity.addMember(admin, { orgId: keys.org_id, userId: u.id });
    assert.deepEqual(await resolve(), { departed: false, granted: true, programme: false, subject: keys.org_id });
  });
});
