import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { openRedis, type RedisLink } from '../store/redis.ts';
import { createLogger } from '../../shared/log.ts';
import { createSessionPins, createSharedStats, type SharedStats } from './shared-stats.ts';
import { endpointKey, WINDOW } from './endpoint-stats.ts';

const redisUrl = process.env.REDIS_URL;
const log = createLogger({ level: 'silent' });

test('session pins without Redis: per gateway, released only while they still name the failed endpoint', () => {
  const pins = createSessionPins();
  pins.set('ws1\u0000s', 'a');
  assert.equal(pins.get('ws1\u0000s'), 'a');
  assert.equal(pins.get('ws2\u0000s'), null);
  pins.release('ws1\u0000s', 'b');
  assert.equal(pins.get('ws1\u0000s'), 'a');
  pins.release('ws1\u0000s', 'a');
  assert.equal(pins.get('ws1\u0000s'), null);
});

describe('shared endpoint measurements and pins over one Redis', { skip: !redisUrl && 'REDIS_URL is not set' }, () => {
  let links: RedisLink[];
  let a: SharedStats;
  let b: SharedStats;
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  before(async () => {
    links = await Promise.all([0, 1].map(() => openRedis({ url: redisUrl!, timeoutMs: 1_000 })));
    // a long period: the test drives each exchange itself
    a = createSharedStats({ redis: links[0]!, log, prefix, everyMs: 60_000 });
    b = createSharedStats({ redis: links[1]!, log, prefix, everyMs: 60_000 });
  });
  after(async () => {
    a.close();
    b.close();
    const keys = await links[0]!.client.keys(`${prefix}*`);
    if (keys.length) await links[0]!.client.del(...keys);
    await Promise.all(links.map((l) => l.close()));
  });

  test("one gateway's samples reach the other's window after a sync each, within the window bound", async () => {
    const k = endpointKey('groq', 'openai/gpt-4o-mini');
    for (const ttft of [30, 10, 20]) a.success(k, { ttftMs: ttft, tps: ttft * 2 });
    assert.deepEqual(b.get(k), { ttftMs: null, tps: null, successRate: null, healthy: true });
    await a.sync();
    await b.sync();
    assert.deepEqual(b.get(k), { ttftMs: 20, tps: 40, successRate: 1, healthy: true });
    // b's own samples and a failure go the other way; each side sees both gateways' calls
    b.success(k, { ttftMs: 40, tps: null });
    b.failure(k);
    await b.sync();
    await a.sync();
    for (const s of [a, b]) assert.deepEqual(s.get(k), { ttftMs: 25, tps: 40, successRate: 0.8, healthy: false });
    for (let i = 0; i < WINDOW + 5; i++) a.success(k, { ttftMs: 7, tps: null });
    await a.sync();
    await b.sync();
    assert.equal(await links[0]!.client.llen(`${prefix}ep:${k}:ttft`), WINDOW);
    assert.deepEqual(b.get(k), { ttftMs: 7, tps: 40, successRate: 1, healthy: false });
  });

  test('a pin set through one gateway is seen through the other, within its workspace only, and released on failure', async () => {
    const [p, q] = links.map((redis) => createSessionPins({ redis, prefix }));
    p!.set('ws1\u0000conv', endpointKey('groq', 'm'));
    // set does not wait; a reply on the same connection comes after the SET was applied
    await links[0]!.client.ping();
    assert.equal(await q!.get('ws1\u0000conv'), endpointKey('groq', 'm'));
    assert.equal(await q!.get('ws2\u0000conv'), null);
    // the key holds a hash: the session id does not appear in Redis
    assert.deepEqual(await links[0]!.client.keys(`${prefix}pin:*conv*`), []);
    q!.release('ws1\u0000conv', endpointKey('openai', 'm'));
    await links[1]!.client.ping();
    assert.equal(await p!.get('ws1\u0000conv'), endpointKey('groq', 'm'));
    q!.release('ws1\u0000conv', endpointKey('groq', 'm'));
    await links[1]!.client.ping();
    assert.equal(await p!.get('ws1\u0000conv'), null);
  });

  test("the router's model pins are another kind: a session's model pin and endpoint pin do not meet", async () => {
    const [models, endpoints] = links.map((redis, i) =>
      createSessionPins({ redis, prefix, ...(i === 0 ? { kind: 'model' as const } : {}) }),
    );
    const seen = createSessionPins({ redis: links[1]!, prefix, kind: 'model' });
    models!.set('ws1\u0000chat', 'openai/gpt-4o-mini');
    await links[0]!.client.ping();
    assert.equal(await seen.get('ws1\u0000chat'), 'openai/gpt-4o-mini');
    assert.equal(await seen.get('ws2\u0000chat'), null);
    assert.equal(await endpoints!.get('ws1\u0000chat'), null);
    assert.equal((await links[0]!.client.keys(`${prefix}model:*`)).length, 1);
  });
});
