// What sharing endpoint measurements and session pins through Redis adds to one model request
// (src/gateway/inference/shared-stats.ts), in process: recording a sample (local store vs. the
// shared one, which also queues it), reading an endpoint's stats, and a session request's pin
// lookup (a Map vs. one Redis GET on loopback, awaited). Interleaved rounds, medians.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx bench/shared-stats.ts
import { randomBytes } from 'node:crypto';
import { openRedis } from '../src/gateway/store/redis.ts';
import { createLogger } from '../src/shared/log.ts';
import { createEndpointStats, endpointKey } from '../src/gateway/inference/endpoint-stats.ts';
import { createSessionPins, createSharedStats } from '../src/gateway/inference/shared-stats.ts';

const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is needed');
const redis = await openRedis({ url, timeoutMs: 1_000 });
const prefix = `bench:${randomBytes(4).toString('hex')}:`;
const log = createLogger({ level: 'silent' });
const local = createEndpointStats();
const shared = createSharedStats({ redis, log, prefix });
const mapPins = createSessionPins();
const redisPins = createSessionPins({ redis, prefix });
const keys = Array.from({ length: 8 }, (_, i) => endpointKey(`p${i}`, 'openai/gpt-4o-mini'));
const session = `${'w'.repeat(36)}\u0000conv-${randomBytes(8).toString('hex')}`;
mapPins.set(session, keys[0]!);
redisPins.set(session, keys[0]!);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
/** Wall µs per call; `cpu`: this process's CPU µs per call instead (a Redis round trip is mostly waiting). */
async function per(n: number, fn: (i: number) => unknown, cpu = false): Promise<number> {
  const t = process.hrtime.bigint();
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(i);
  if (cpu) {
    const u = process.cpuUsage(c);
    return (u.user + u.system) / n;
  }
  return Number(process.hrtime.bigint() - t) / 1e3 / n;
}
const rows: Record<string, number[]> = {
  'record a sample, local': [],
  'record a sample, shared': [],
  'read stats (get), local': [],
  'read stats (get), shared': [],
  'one sync of 8 endpoints, CPU (every 250 ms, not per request)': [],
  'pin lookup, Map': [],
  'pin lookup, Redis GET (wall)': [],
  'pin lookup, Redis GET (CPU)': [],
  'pin kept, same endpoint (no write)': [],
  'pin moved, Redis SET (CPU, not awaited)': [],
};
for (let round = 0; round < 7; round++) {
  rows['record a sample, local']!.push(
    await per(20_000, (i) => local.success(keys[i & 7]!, { ttftMs: 100 + (i & 31), tps: 50 })),
  );
  rows['record a sample, shared']!.push(
    await per(20_000, (i) => shared.success(keys[i & 7]!, { ttftMs: 100 + (i & 31), tps: 50 })),
  );
  rows['read stats (get), local']!.push(await per(20_000, (i) => local.get(keys[i & 7]!)));
  rows['read stats (get), shared']!.push(await per(20_000, (i) => shared.get(keys[i & 7]!)));
  rows['pin lookup, Map']!.push(await per(20_000, () => mapPins.get(session)));
  rows['pin lookup, Redis GET (wall)']!.push(await per(2_000, () => redisPins.get(session)));
  rows['pin lookup, Redis GET (CPU)']!.push(await per(2_000, () => redisPins.get(session), true));
  rows['pin kept, same endpoint (no write)']!.push(await per(20_000, () => redisPins.set(session, keys[0]!)));
  rows['pin moved, Redis SET (CPU, not awaited)']!.push(
    await per(2_000, (i) => redisPins.set(session, keys[(i & 1) + 1]!), true),
  );
  redisPins.set(session, keys[0]!);
  await redis.client.ping();
  rows['one sync of 8 endpoints, CPU (every 250 ms, not per request)']!.push(await per(1, () => shared.sync(), true));
}
console.log('| per request | µs (median of 7) |\n|---|---|');
for (const [name, xs] of Object.entries(rows)) console.log(`| ${name} | ${median(xs).toFixed(2)} |`);
shared.close();
const left = await redis.client.keys(`${prefix}*`);
if (left.length) await redis.client.del(...left);
await redis.close();
