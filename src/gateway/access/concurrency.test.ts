import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MemorySlots, createConcurrencyLimiter, type ConcurrencyLimiter } from './concurrency.ts';
import { type ApiError, errorBody } from '../errors.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) process.stderr.write('# Redis concurrency variant skipped: REDIS_URL is not set\n');

const limits = { model: { perKey: 2, perAccount: 3 }, stream: { perKey: 1, perAccount: 0 } };

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    return err as ApiError;
  }
  assert.fail('expected a refusal');
}

test('MemorySlots: all scopes or none, the first full one named; 0 is no limit', () => {
  const m = new MemorySlots();
  assert.equal(m.take(['k', 'a'], [1, 2]), -1);
  assert.equal(m.take(['k', 'a'], [1, 2]), 0);
  assert.equal(m.take(['k2', 'a'], [1, 2]), -1);
  // The key has room, the account does not, and nothing was taken for the key.
  assert.equal(m.take(['k3', 'a'], [1, 2]), 1);
  assert.equal(m.take(['k3', 'b'], [1, 2]), -1);
  m.give(['k', 'a']);
  assert.equal(m.take(['k', 'a'], [1, 2]), -1);
  for (let i = 0; i < 1000; i++) assert.equal(m.take(['free'], [0]), -1);
});

const variants: { name: string; make: () => Promise<ConcurrencyLimiter>; skip?: boolean }[] = [
  { name: 'in process', make: () => createConcurrencyLimiter({ limits }) },
  {
    name: 'Redis',
    skip: !redisUrl,
    make: () =>
      createConcurrencyLimiter({ limits, redisUrl, keyPrefix: `cohort:test:${randomBytes(4).toString('hex')}` }),
  },
];

for (const v of variants) {
  describe(`concurrency limiter (${v.name})`, { skip: v.skip }, () => {
    test('per key, then per account: 429 rate_limited with Retry-After naming the limit; a release frees the slot once', async () => {
      const l = await v.make();
      const r1 = await l.acquire('model', { keyId: 'k1', accountId: 'acct' });
      await l.acquire('model', { keyId: 'k1', accountId: 'acct' });
      const overKey = await refusal(l.acquire('model', { keyId: 'k1', accountId: 'acct' }));
      assert.equal(overKey.status, 429);
      assert.deepEqual(errorBody(overKey, { metadata: true }), {
        error: {
          code: 429,
          message: 'too many concurrent model requests for this API key (at most 2); retry when one ends',
          metadata: { reason: 'rate_limited', retryable: true },
        },
      });
      assert.equal(overKey.headers['retry-after'], '1');
      await l.acquire('model', { keyId: 'k2', accountId: 'acct' });
      const overAccount = await refusal(l.acquire('model', { keyId: 'k3', accountId: 'acct' }));
      assert.equal(
        overAccount.message,
        'too many concurrent model requests for this account (at most 3); retry when one ends',
      );
      // Another account, and the other kind, are unaffected.
      await l.acquire('model', { keyId: 'k4', accountId: 'other' });
      await l.acquire('stream', { keyId: 'k1', accountId: 'acct' });
      assert.equal(
        (await refusal(l.acquire('stream', { keyId: 'k1', accountId: 'acct' }))).message,
        'too many concurrent intern chat streams for this API key (at most 1); retry when one ends',
      );
      assert.equal(l.held, 5);
      r1();
      r1();
      assert.equal(l.held, 4);
      await l.acquire('model', { keyId: 'k3', accountId: 'acct' });
      await refusal(l.acquire('model', { keyId: 'k3', accountId: 'acct' }));
      await l.close();
    });
  });
}

test("Redis: two gateways share the slots; held leases are renewed; a dead gateway's lease lapses on its own", {
  skip: !redisUrl,
}, async () => {
  const keyPrefix = `cohort:test:${randomBytes(4).toString('hex')}`;
  const who = { keyId: 'k', accountId: 'acct' };
  const a = await createConcurrencyLimiter({ limits, redisUrl, keyPrefix, leaseMs: 600 });
  const b = await createConcurrencyLimiter({ limits, redisUrl, keyPrefix, leaseMs: 600 });
  const fromA = await a.acquire('model', who);
  await b.acquire('model', who);
  await refusal(a.acquire('model', who));
  fromA();
  // The release reached Redis: B may take the slot A gave back.
  let took = false;
  for (let i = 0; i < 20 && !took; i++)
    took = await b.acquire('model', who).then(
      () => true,
      () => false,
    );
  assert.ok(took);
  // B renews its leases every 200 ms, so they outlive the 600 ms lease while held.
  await new Promise((r) => setTimeout(r, 1000));
  await refusal(a.acquire('model', who));
  await b.close();
  // A gateway that died holding a slot renews nothing: its lease lapses and the slot frees.
  const { Redis } = await import('ioredis');
  const raw = new Redis(redisUrl!);
  const [sec] = await raw.time();
  await raw.zadd(`${keyPrefix}:model:key:k`, Number(sec) * 1000 + 1500, 'dead-gateway-lease');
  await a.acquire('model', who);
  await refusal(a.acquire('model', who));
  await new Promise((r) => setTimeout(r, 2100));
  await a.acquire('model', who);
  raw.disconnect();
  await a.close();
});
