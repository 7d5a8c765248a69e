// The ledger in-process, with an injected clock and the store's spend as a table: a limit reached
// refuses until its period ends, reservations count against it and lapse, BYOK in or out.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type BudgetScope, createLedger, type Ledger } from './budgets.ts';
import { openRedis } from '../store/redis.ts';
import { redisServerMissing, startOwnRedis, type OwnRedis } from '../../../test/helpers/redis-server.ts';
import { ApiError } from '../errors.ts';

const DAY = 86_400_000;
const scope = (o: Partial<BudgetScope> = {}): BudgetScope => ({
  id: 'key:k1',
  what: 'key',
  limitUsd: 1,
  reset: 'daily',
  includeByok: false,
  ...o,
});

function ledger(rows: { at: number; cost: number; byok?: boolean }[], clock: { t: number }) {
  return createLedger({
    now: () => clock.t,
    reserveTtlMs: 1000,
    spentSince: async (_s, from) => ({
      own: rows.filter((r) => r.at >= from && !r.byok).reduce((a, r) => a + r.cost, 0),
      byok: rows.filter((r) => r.at >= from && r.byok).reduce((a, r) => a + r.cost, 0),
    }),
  });
}

const refused = async (p: Promise<void>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, 'refused');
  return err;
};

test('a daily limit reached refuses until the next UTC midnight, to the millisecond', async () => {
  const midnight = Date.parse('2026-11-28T00:00:00.000Z');
  const clock = { t: midnight - 60_000 };
  const rows = [{ at: midnight - 120_000, cost: 1 }];
  const l = ledger(rows, clock);
  const err = await refused(l.admit({ requestId: 'a', scopes: [scope()] }));
  assert.equal(err.status, 402);
  assert.equal(err.message, "the API key's spending limit of 1 USD is reached; it resets at 2026-11-28T00:00:00.000Z");
  clock.t = midnight - 1;
  await refused(l.admit({ requestId: 'b', scopes: [scope()] }));
  clock.t = midnight;
  await l.admit({ requestId: 'c', scopes: [scope()] });
  // a weekly limit over the same spend is still spent on this Saturday
  await refused(l.admit({ requestId: 'd', scopes: [scope({ id: 'key:k2', reset: 'weekly' })] }));
  clock.t = midnight + 2 * DAY; // Monday
  await l.admit({ requestId: 'e', scopes: [scope({ id: 'key:k2', reset: 'weekly' })] });
});

test('reservations of requests in flight count; settling replaces them with the cost; unsettled ones lapse', async () => {
  const clock = { t: Date.parse('2026-11-27T12:00:00Z') };
  const l = ledger([{ at: clock.t - 1, cost: 0.5 }], clock);
  const s = [scope()];
  await l.admit({ requestId: 'r1', scopes: s });
  l.settle({ requestId: 'r1', scopes: s, cost: 0.2, isByok: false }); // 0.7 spent; reservations are 0.2 now
  await l.admit({ requestId: 'r2', scopes: s }); // 0.7 + 0 reserved < 1
  await l.admit({ requestId: 'r3', scopes: s }); // 0.7 + 0.2 < 1
  await refused(l.admit({ requestId: 'r4', scopes: s })); // 0.7 + 0.4 >= 1
  l.settle({ requestId: 'r2', scopes: s, cost: 0.05, isByok: false }); // 0.75 + 0.2 (r3)
  await l.admit({ requestId: 'r5', scopes: s }); // 0.95 < 1; reserves 0.05
  await refused(l.admit({ requestId: 'r6', scopes: s }));
  clock.t += 1001; // r3 and r5 never settled: their reservations lapse
  await l.admit({ requestId: 'r7', scopes: s });
});

test('BYOK spend counts only where the scope includes it; the first spent scope is named', async () => {
  const clock = { t: Date.parse('2026-11-27T12:00:00Z') };
  const l = ledger([{ at: clock.t - 1, cost: 3, byok: true }], clock);
  await l.admit({ requestId: 'a', scopes: [scope()] });
  const err = await refused(
    l.admit({
      requestId: 'b',
      scopes: [
        scope({ id: 'key:k9', limitUsd: 100 }),
        scope({ id: 'guardrail:g', what: 'guardrail', includeByok: true, reset: null }),
      ],
    }),
  );
  assert.equal(err.message, "the guardrail's spending limit of 1 USD is reached; it does not reset: raise the limit");
});

describe('the ledger in Redis', { skip: redisServerMissing ?? false }, () => {
  let own: OwnRedis;
  before(async () => {
    own = await startOwnRedis();
  });
  after(() => own?.stop());

  test('two ledgers (two gateways) share counters; a hung Redis falls back to in-process counts at once', async () => {
    const clock = { t: Date.parse('2026-11-27T12:00:00Z') };
    const links = await Promise.all([1, 2].map(() => openRedis({ url: own.url, timeoutMs: 300 })));
    try {
      const [a, b] = links.map((redis) =>
        createLedger({
          now: () => clock.t,
          reserveTtlMs: 1000,
          redis,
          spentSince: async () => ({ own: 0.5, byok: 0 }),
        }),
      ) as [Ledger, Ledger];
      const s = [scope()];
      await a.admit({ requestId: 'r1', scopes: s });
      a.settle({ requestId: 'r1', scopes: s, cost: 0.3, isByok: false });
      // The settle is sent without waiting; Redis answers a link's commands in order, so once a
      // ping on the same link is answered the settle has been applied.
      await links[0]!.client.ping();
      await b.admit({ requestId: 'r2', scopes: s }); // 0.8 spent: admitted, reserving 0.3
      const err = await refused(a.admit({ requestId: 'r3', scopes: s })); // b's reservation counts here
      assert.equal(err.status, 402);
      b.settle({ requestId: 'r2', scopes: s, cost: 0.1, isByok: false });
      await links[1]!.client.ping();
      await a.admit({ requestId: 'r4', scopes: s }); // 0.9 spent, nothing reserved
      own.freeze();
      const started = Date.now();
      // Redis answers nothing: within its timeout the ledger counts in process, from the store (0.5)
      await a.admit({ requestId: 'r5', scopes: s });
      assert.ok(Date.now() - started < 1500, `${Date.now() - started} ms`);
      assert.equal(links[0]!.usable(), false);
      own.thaw();
    } finally {
      own.thaw();
      await Promise.all(links.map((l) => l.close()));
    }
  });
});
