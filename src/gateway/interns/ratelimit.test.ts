import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { createTurnLimiter } from './ratelimit.ts';
import { type ApiError, errorBody } from '../errors.ts';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { setInternState } from './interns.ts';
import { createKey } from '../access/identity-store.ts';
import { openRedis } from '../store/redis.ts';
import { redisServerMissing, startOwnRedis } from '../../../test/helpers/redis-server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) process.stderr.write('# Redis rate-limit variant skipped: REDIS_URL is not set\n');

async function refusal(p: Promise<void>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    return err as ApiError;
  }
  assert.fail('expected a refusal');
}

describe('turn rate limiter', () => {
  test('in process: the limit per subject, then 429 rate_limited with Retry-After; subjects are independent', async () => {
    const l = await createTurnLimiter({ perMinute: 2 });
    await l.consume('u1');
    await l.consume('u1');
    const err = await refusal(l.consume('u1'));
    assert.equal(err.status, 429);
    assert.deepEqual(errorBody(err, { metadata: true }).error.metadata, { reason: 'rate_limited', retryable: true });
    assert.match(err.headers['retry-after']!, /^[1-9]\d*$/);
    assert.ok(Number(err.headers['retry-after']) <= 60);
    await l.consume('u2');
    await l.close();
  });

  test('Redis: two gateways share one counter', { skip: !redisUrl }, async () => {
    const keyPrefix = `cohort:test:${randomBytes(4).toString('hex')}`;
    const a = await createTurnLimiter({ perMinute: 2, redisUrl, keyPrefix });
    const b = await createTurnLimiter({ perMinute: 2, redisUrl, keyPrefix });
    await a.consume('org');
    await b.consume('org');
    assert.equal((await refusal(a.consume('org'))).status, 429);
    assert.equal((await refusal(b.consume('org'))).status, 429);
    await a.close();
    await b.close();
  });
});

describe('turn rate limiter and a frozen Redis', { skip: redisServerMissing ?? false }, () => {
  test('the first turn waits for one timeout, then turns count in process until Redis answers again', async () => {
    const own = await startOwnRedis();
    const link = await openRedis({ url: own.url, timeoutMs: 200 });
    const l = await createTurnLimiter({ perMinute: 2, redis: link, keyPrefix: 'cohort:test:turns' });
    try {
      await l.consume('org'); // in Redis
      own.freeze();
      await l.consume('org'); // times out: counted here
      assert.equal(link.usable(), false);
      await l.consume('org'); // here at once
      // In process the subject has had two turns: the limit holds there too.
      assert.equal((await refusal(l.consume('org'))).status, 429);
      own.thaw();
      await waitFor('the link to Redis is usable again', () => link.usable(), { everyMs: 25 });
      // Redis counts again: its count is one, and the turn sent while it was frozen reached it on waking.
      await refusal(l.consume('org'));
    } finally {
      own.thaw();
      await l.close();
      await link.close();
      await own.stop();
    }
  });
});

describe('rate limits at the chat route', () => {
  let gw: TestGateway;
  let id: string;
  let daemon: Server;
  before(async () => {
    gw = await startTestGateway({ env: { COHORT_TURNS_PER_MINUTE: '2' } });
    id = (await gw.call('POST', '/interns', { body: { name: 'limited' } })).body.id;
    // A running intern whose "daemon" answers every request with a bare 500: each admitted turn is
    // 502 intern_rejected (and the intern stays running), so the count is visible.
    daemon = createServer((_req, res) => res.writeHead(500).end('no'));
    daemon.listen(0, '127.0.0.1');
    await once(daemon, 'listening');
    const hostname = `http://127.0.0.1:${(daemon.address() as AddressInfo).port}`;
    await setInternState(gw.ctx.store.db, { id, patch: { status: 'running', hostname } });
  });
  after(async () => {
    await gw.close();
    daemon.close();
  });

  const turn = (key: string) =>
    gw.call('POST', `/interns/${id}/chat/completions`, {
      key,
      body: { stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });

  test('turns beyond the limit of the user the key acts as are 429 with Retry-After; replies do not count', async () => {
    const reply = await gw.call('POST', `/interns/${id}/chat/completions`, {
      key: gw.keys.api_key,
      body: { stream: true, session_id: 's', messages: [{ role: 'tool', tool_call_id: 'i', content: 'allow_once' }] },
    });
    assert.equal(reply.status, 502);
    assert.equal((await turn(gw.keys.api_key)).status, 502);
    assert.equal((await turn(gw.keys.management_key)).status, 502);
    const limited = await turn(gw.keys.api_key);
    assert.equal(limited.status, 429);
    assert.deepEqual(limited.body.error.metadata, { reason: 'rate_limited', retryable: true });
    assert.match(limited.headers.get('retry-after')!, /^\d+$/);
  });

  test('keys acting as the organization share the organization’s counter, apart from the user’s', async () => {
    const mk = async () =>
      (
        await createKey(gw.ctx.store.db, {
          orgId: gw.keys.org_id,
          creatorUserId: gw.keys.user_id,
          kind: 'standard',
          actsAs: 'organization',
          workspaceId: gw.keys.workspace_id,
        })
      ).raw;
    const [k1, k2] = [await mk(), await mk()];
    assert.equal((await turn(k1)).status, 502);
    assert.equal((await turn(k2)).status, 502);
    assert.equal((await turn(k1)).status, 429);
  });
});
