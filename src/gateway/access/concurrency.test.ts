import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MemorySlots, createConcurrencyLimiter, type ConcurrencyLimiter } from './concurrency.ts';
import { type ApiError, errorBody } from '../errors.ts';
import { Redis } from 'ioredis';
import { openRedis } from '../store/redis.ts';
import { redisServerMissing, startOwnRedis, type OwnRedis } from '../../../test/helpers/redis-server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

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
  const raw = new Redis(redisUrl!);
  /** Redis's clock, which lease ends are measured on. */
  const redisNow = async () => {
    const [s, us] = await raw.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
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
  // B renews its leases every 200 ms, so they outlive the 600 ms lease while held: past the end
  // its leases have now, on Redis's clock, they still hold the slots.
  const ends = (await raw.zrange(`${keyPrefix}:model:key:k`, '0', '-1', 'WITHSCORES')).filter((_, i) => i % 2 === 1);
  const lastEnd = Math.max(...ends.map(Number));
  await waitFor("Redis's clock passes the end B's leases had", async () => (await redisNow()) > lastEnd);
  await refusal(a.acquire('model', who));
  await b.close();
  // A gateway that died holding a slot renews nothing: its lease lapses and the slot frees.
  const deadEnd = (await redisNow()) + 1500;
  await raw.zadd(`${keyPrefix}:model:key:k`, deadEnd, 'dead-gateway-lease');
  await a.acquire('model', who);
  await refusal(a.acquire('model', who));
  await waitFor("Redis's clock passes the dead gateway's lease end", async () => (await redisNow()) > deadEnd);
  await a.acquire('model', who);
  raw.disconnect();
  await a.close();
});

describe('slots in a Redis of the test’s own', { skip: redisServerMissing ?? false }, () => {
  let own: OwnRedis;
  let raw: Redis;
  before(async () => {
    own = await startOwnRedis();
    raw = new Redis(own.url);
  });
  after(async () => {
    raw.disconnect();
    await own.stop();
  });
  const keyPrefix = () => `cohort:test:${randomBytes(4).toString('hex')}`;
  const who = { keyId: 'k', accountId: 'acct' };
  const nowMs = async () => {
    const [s, us] = await raw.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };

  test('a frozen Redis: one acquire waits for the timeout and counts in process, later ones do not wait, and after a thaw the slots are shared again', async () => {
    const prefix = keyPrefix();
    const link = await openRedis({ url: own.url, timeoutMs: 200 });
    const l = await createConcurrencyLimiter({ limits, redis: link, keyPrefix: prefix });
    try {
      own.freeze();
      const r1 = await l.acquire('model', who);
      assert.equal(link.usable(), false);
      const r2 = await l.acquire('model', who);
      const over = await refusal(l.acquire('model', who));
      assert.equal(
        over.message,
        'too many concurrent model requests for this API key (at most 2); retry when one ends',
      );
      own.thaw();
      await waitFor('the link to Redis is usable again', () => link.usable());
      r1();
      r2();
      const r3 = await l.acquire('model', who);
      // The acquire that timed out was taken by Redis when it woke; the next heartbeat gives it back.
      const leases = () => raw.zcard(`${prefix}:model:key:k`);
      await waitFor('one lease is left', async () => (await leases()) === 1);
      r3();
    } finally {
      own.thaw();
      await l.close();
      await link.close();
    }
  });

  test('leases of a gateway whose heartbeat is late are named in the 429 with the time they end as Retry-After, and are dropped once it passes', async () => {
    const prefix = keyPrefix();
    const l = await createConcurrencyLimiter({ limits, redisUrl: own.url, keyPrefix: prefix, gatewayLeaseMs: 6000 });
    try {
      const now = await nowMs();
      // A gateway silent for 4 s (its deadline 2 s away), holding the key's two model slots.
      await raw.hset(`${prefix}:gateways`, 'ghost', now + 2000);
      await raw.zadd(`${prefix}:model:key:k`, now + 60_000, 'ghost/1', now + 60_000, 'ghost/2');
      // A live one (it beat a moment ago), holding another key's stream slot.
      await raw.hset(`${prefix}:gateways`, 'live', now + 5900);
      await raw.zadd(`${prefix}:stream:key:k2`, now + 60_000, 'live/1');
      const silent = await refusal(l.acquire('model', who));
      assert.deepEqual(errorBody(silent, { metadata: true }), {
        error: {
          code: 429,
          message:
            'too many concurrent model requests for this API key (at most 2); 2 of them are held by a gateway that stopped answering, freed within 2 s',
          metadata: { reason: 'rate_limited', retryable: true },
        },
      });
      assert.equal(silent.headers['retry-after'], '2');
      const busy = await refusal(l.acquire('stream', { keyId: 'k2', accountId: 'acct2' }));
      assert.equal(
        busy.message,
        'too many concurrent intern chat streams for this API key (at most 1); retry when one ends',
      );
      assert.equal(busy.headers['retry-after'], '1');
      await waitFor('a model slot of the key frees', () => l.acquire('model', who).catch(() => null));
      const left = await raw.zrange(`${prefix}:model:key:k`, '0', '-1');
      assert.deepEqual([left.length, left.some((m) => m.startsWith('ghost/'))], [1, false]);
    } finally {
      await l.close();
    }
  });

  test('a gateway that closes takes its leases and its heartbeat with it', async () => {
    const prefix = keyPrefix();
    const l = await createConcurrencyLimiter({ limits, redisUrl: own.url, keyPrefix: prefix });
    await l.acquire('model', who);
    assert.equal(await raw.hlen(`${prefix}:gateways`), 1);
    await l.close();
    assert.deepEqual([await raw.zcard(`${prefix}:model:key:k`), await raw.hlen(`${prefix}:gateways`)], [0, 0]);
  });
});
