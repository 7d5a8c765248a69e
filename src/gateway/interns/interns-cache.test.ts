// The chat route's short cache of running interns (findInternForChat): fresh for a TTL, served once
// more while one read refreshes it, read again past that, and never brought back by a read that a
// transition in this process overtook. Another gateway's change is simulated by writing the row directly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { openStore, type Store } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createSealer } from '../crypto/seal.ts';
import { createTestAccount } from '../../../test/helpers/accounts.ts';
import { interns } from '../store/schema-interns.ts';
import type { Principal } from '../access/identity-store.ts';
import { createIntern, findInternForChat, setInternState } from './interns.ts';
import { waitForValue } from '../../../test/helpers/wait.ts';

let store: Store;
let principal: Principal;
before(async () => {
  store = await openStore({});
  await migrate(store);
  const a = await createTestAccount(store.db, { name: 'cache' });
  principal = {
    keyId: a.managementKeyId,
    keyHash: '',
    orgId: a.orgId,
    kind: 'standard',
    actsAs: 'user',
    userId: a.userId,
    subjectId: a.userId,
    workspaceId: a.workspaceId,
    creatorDeparted: false,
    granted: false,
    internsProgramme: true,
  } as Principal;
});
after(() => store.close());

const elsewhere = (id: string, status: 'running' | 'stopped') =>
  store.db.update(interns).set({ status }).where(eq(interns.id, id));
/** A fixed wait: a refresh under way is not observable from outside the cache, so it is given time to land. */
const settle = () => new Promise((r) => setTimeout(r, 50));

test('a running intern is cached for a TTL, served once more while a read refreshes it, and read again past two TTLs', async (t) => {
  const { row } = await createIntern(store.db, {
    principal,
    sealer: createSealer(randomBytes(32)),
    body: { name: 'cached' },
  });
  await setInternState(store.db, { id: row.id, patch: { status: 'running', hostname: 'http://127.0.0.1:1' } });
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });

  assert.equal((await findInternForChat(store.db, { principal, id: row.id })).status, 'running');
  await elsewhere(row.id, 'stopped');
  assert.equal((await findInternForChat(store.db, { principal, id: row.id })).status, 'running', 'fresh: no read');

  t.mock.timers.tick(1_100);
  assert.equal(
    (await findInternForChat(store.db, { principal, id: row.id })).status,
    'running',
    'just expired: served while a read refreshes it',
  );
  // Served from the entry until the refresh lands (a broken refresh never lands: the wait times out).
  const refreshed = await waitForValue(
    'the refresh landed',
    () => findInternForChat(store.db, { principal, id: row.id }),
    (r) => r.status !== 'running',
  );
  assert.equal(refreshed.status, 'stopped', 'the refresh saw the change');

  await elsewhere(row.id, 'running');
  assert.equal((await findInternForChat(store.db, { principal, id: row.id })).status, 'running');
  await elsewhere(row.id, 'stopped');
  t.mock.timers.tick(2_100);
  assert.equal(
    (await findInternForChat(store.db, { principal, id: row.id })).status,
    'stopped',
    'past two TTLs: read before answering',
  );
});

test('a transition made here is not undone by a refresh that was already under way', async (t) => {
  const { row } = await createIntern(store.db, {
    principal,
    sealer: createSealer(randomBytes(32)),
    body: { name: 'raced' },
  });
  await setInternState(store.db, { id: row.id, patch: { status: 'running', hostname: 'http://127.0.0.1:1' } });
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  await findInternForChat(store.db, { principal, id: row.id });
  t.mock.timers.tick(1_100);
  await findInternForChat(store.db, { principal, id: row.id }); // starts a refresh that reads "running"
  await setInternState(store.db, { id: row.id, patch: { status: 'stopped' } }); // this process's own transition
  await settle();
  assert.equal((await findInternForChat(store.db, { principal, id: row.id })).status, 'stopped');
});
