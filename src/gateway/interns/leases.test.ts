// Leases on held work (provisions, deletions): the pure rules table by table, and the
// compare-and-set claims against a real store, by the database's clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { claimLapsed, lapsedWork, mayJudge, renewLeases, takeoverOf } from './leases.ts';
import { getInternById, setInternState } from './interns.ts';
import type { InternStatus } from '../store/schema-interns.ts';

test('mayJudge: only after a whole lease of unbroken renewals', () => {
  const cases: [number | null, number, boolean][] = [
    [null, 10_000, false], // never renewed, or the last renewal failed
    [5_000, 10_000, false], // renewing for 5 s of a 6 s lease
    [4_000, 10_000, true], // exactly one lease
    [0, 10_000, true],
  ];
  for (const [healthySince, now, want] of cases)
    assert.equal(mayJudge({ healthySince, now, leaseMs: 6_000 }), want, `${healthySince} at ${now}`);
});

test('takeoverOf: what a lapsed intern becomes, by status, and never while the work runs here or before judging', () => {
  const cases: [InternStatus, boolean, boolean, 'provision' | 'delete' | null][] = [
    ['provisioning', false, true, 'provision'],
    ['destroying', false, true, 'delete'],
    ['provisioning', true, true, null],
    ['destroying', true, true, null],
    ['provisioning', false, false, null],
    ['running', false, true, null],
    ['failed', false, true, null],
    ['stopped', false, true, null],
    ['destroy_failed', false, true, null],
  ];
  for (const [status, runningHere, judging, want] of cases)
    assert.equal(takeoverOf({ status, runningHere, judging }), want, `${status} ${runningHere} ${judging}`);
});

for (const store of storeMatrix)
  describe(`leases in the store (${store.name})`, () => {
    let gw: TestGateway;
    before(async () => {
      // Its own lease keeper judges only after ten minutes: the leases here are the test's alone.
      gw = await startTestGateway({ postgres: store.postgres, env: { COHORT_GATEWAY_LEASE_MS: '600000' } });
    });
    after(() => gw.close());
    const db = () => gw.ctx.store.db;
    const intern = async (name: string) => (await gw.call('POST', '/interns', { body: { name } })).body.id as string;

    test('a lease renewed by its owner never lapses; one that was not lapses, and exactly one of two claimers takes it', async () => {
      const id = await intern('held');
      await setInternState(db(), { id, lease: { owner: 'a', ms: 60_000 }, patch: { status: 'provisioning' } });
      assert.equal(await renewLeases(db(), { owner: 'a', ms: 60_000 }), 1);
      assert.equal(await renewLeases(db(), { owner: 'b', ms: 60_000 }), 0);
      assert.deepEqual(
        (await lapsedWork(db(), { ms: 60_000 })).map((r) => r.id),
        [],
      );
      const row = (await getInternById(db(), id))!;
      assert.equal(await claimLapsed(db(), row, { owner: 'b', ms: 60_000 }), null);

      // Its owner stopped: the lease ended a second ago.
      await db().execute(sql`update interns set lease_until = now() - interval '1 second' where id = ${id}`);
      const lapsed = await lapsedWork(db(), { ms: 60_000 });
      assert.deepEqual(
        lapsed.map((r) => [r.id, r.status, r.leaseOwner]),
        [[id, 'provisioning', 'a']],
      );
      const queued = { step_label: 'queued', step_number: 1, total_steps: 3 };
      const [b, c] = await Promise.all([
        claimLapsed(db(), lapsed[0]!, { owner: 'b', ms: 60_000, progress: queued }),
        claimLapsed(db(), lapsed[0]!, { owner: 'c', ms: 60_000, progress: queued }),
      ]);
      assert.equal([b, c].filter(Boolean).length, 1);
      const winner = (b ?? c)!;
      assert.deepEqual([winner.status, winner.progress], ['provisioning', queued]);
      assert.ok(winner.leaseUntil! > new Date(Date.now() + 50_000));
      // The dead owner's steps no longer match: its writes are refused.
      assert.equal(
        await setInternState(db(), { id, from: ['provisioning'], leaseOwner: 'a', patch: { progress: null } }),
        null,
      );
      assert.deepEqual(
        (await lapsedWork(db(), { ms: 60_000 })).map((r) => r.id),
        [],
      );
    });

    test('held work from before leases (no lease) lapses once untouched for a lease; other statuses never do', async () => {
      const old = await intern('from-before');
      const fresh = await intern('just-queued');
      const running = await intern('running');
      await db().execute(
        sql`update interns set status = 'destroying', updated_at = now() - interval '10 seconds' where id = ${old}`,
      );
      await db().execute(sql`update interns set status = 'provisioning' where id = ${fresh}`);
      await db().execute(
        sql`update interns set status = 'running', lease_owner = 'x', lease_until = now() - interval '1 hour' where id = ${running}`,
      );
      const ids = (await lapsedWork(db(), { ms: 5_000 })).map((r) => r.id);
      assert.ok(ids.includes(old));
      assert.ok(!ids.includes(fresh));
      assert.ok(!ids.includes(running));
      const claimed = await claimLapsed(db(), (await getInternById(db(), old))!, { owner: 'me', ms: 5_000 });
      assert.deepEqual([claimed?.status, claimed?.leaseOwner], ['destroying', 'me']);
    });
  });
