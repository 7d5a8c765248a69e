// The Redis link against a Redis of the test's own that it freezes (SIGSTOP: connections are
// accepted, nothing is answered) and thaws, as a hung Redis behaves.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openRedis, RedisUnreachable } from './redis.ts';
import { redisServerMissing, startOwnRedis, type OwnRedis } from '../../../test/helpers/redis-server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

if (redisServerMissing) process.stderr.write(`# frozen-Redis tests skipped: ${redisServerMissing}\n`);

describe('the Redis link', { skip: redisServerMissing ?? false }, () => {
  let redis: OwnRedis;
  before(async () => {
    redis = await startOwnRedis();
  });
  after(() => redis.stop());

  test('a command to a frozen Redis fails with a timeout; the link is then unusable until Redis answers again', async () => {
    const states: boolean[] = [];
    const link = await openRedis({ url: redis.url, timeoutMs: 200, onHung: (h) => states.push(h) });
    try {
      assert.equal(link.usable(), true);
      assert.equal(await link.client.set('k', 'v'), 'OK');
      redis.freeze();
      const err = await link.client.get('k').then(
        () => null,
        (e: Error) => e,
      );
      assert.equal(err?.message, 'Command timed out');
      link.failed(err);
      assert.equal(link.usable(), false);
      redis.thaw();
      assert.equal(await waitFor('the link is usable again', link.usable, { everyMs: 25 }), true);
      assert.equal(await link.client.get('k'), 'v');
    } finally {
      redis.thaw();
      await link.close();
    }
    assert.deepEqual(states, [true, false]);
  });

  test('opening a link to a frozen Redis gives up within two timeouts, saying so', async () => {
    redis.freeze();
    try {
      const err = await openRedis({ url: redis.url, timeoutMs: 200 }).then(
        () => null,
        (e: Error) => e,
      );
      assert.ok(err instanceof RedisUnreachable);
      assert.equal(err.message, 'Redis did not answer within 400 ms');
    } finally {
      redis.thaw();
    }
  });

  test('opening a link to a closed port is refused at once, saying why', async () => {
    const err = await openRedis({ url: 'redis://127.0.0.1:1', timeoutMs: 200 }).then(
      () => null,
      (e: Error) => e,
    );
    assert.ok(err instanceof RedisUnreachable);
    assert.match(err.message, /^cannot reach Redis: connect ECONNREFUSED 127\.0\.0\.1:1$/);
  });
});
