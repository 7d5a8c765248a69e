import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { lookup } from 'node:dns/promises';
import { createLogger } from '../../shared/log.ts';
import { internalAddress } from '../../shared/egress-policy.ts';
import { createBroadcaster } from './broadcast.ts';
import { modelSpan } from './spans.ts';

const span = modelSpan(
  { id: 'gen-01a21d47-dd54-7ef6-964c-ca52a043be7c', apiStyle: 'chat', streamed: false, status: 200, latencyMs: 3 },
  null,
);

/** Spans one collector took, through a broadcaster whose only destination is `url`. */
async function exportTo(url: string, internalAllowed: boolean) {
  const counts = { exported: 0, dropped: 0 };
  const b = createBroadcaster({
    log: createLogger({ level: 'silent' }),
    installation: { key: 'only', url, protocol: 'http/json', headers: {}, internalAllowed },
    destinationsOf: async () => ({ enabled: true, list: [] }),
    cacheMs: 60_000,
    onSpans: (o) => ('exported' in o ? (counts.exported += o.exported) : (counts.dropped += o.dropped)),
  });
  b.emit('ws', () => span);
  await b.flush();
  await b.close();
  return counts;
}

test('a collector whose name resolves inside is connected to only where the operator allowed it', async (t) => {
  const name = hostname();
  const addrs = await lookup(name, { all: true }).catch(() => []);
  if (!addrs.some((a) => a.address === '127.0.0.1') || !addrs.every((a) => internalAddress(a.address)))
    return t.skip(`this host's name (${name}) does not resolve to loopback only`);
  let received = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      received++;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://${name}:${(server.address() as AddressInfo).port}/v1/traces`;
  try {
    assert.deepEqual(await exportTo(url, false), { exported: 0, dropped: 1 });
    assert.equal(received, 0);
    assert.deepEqual(await exportTo(url, true), { exported: 1, dropped: 0 });
    assert.equal(received, 1);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('spans past a full queue, and those a dead collector does not take, are dropped and counted', async () => {
  const counts = { exported: 0, dropped: 0 };
  const b = createBroadcaster({
    log: createLogger({ level: 'silent' }),
    // Nothing listens on port 9 of loopback: every export fails.
    installation: {
      key: 'dead',
      url: 'http://127.0.0.1:9/v1/traces',
      protocol: 'http/json',
      headers: {},
      internalAllowed: true,
    },
    destinationsOf: async () => ({ enabled: true, list: [] }),
    cacheMs: 60_000,
    maxQueued: 10,
    onSpans: (o) => ('exported' in o ? (counts.exported += o.exported) : (counts.dropped += o.dropped)),
  });
  await b.flush(); // the workspace's (empty) destination list is read once
  for (let i = 0; i < 100; i++) b.emit('ws', () => span);
  await b.flush();
  await b.close();
  assert.deepEqual(counts, { exported: 0, dropped: 100 });
});

test('a span every collector takes as protobuf is written once: each gets the same request, in batches', async () => {
  const bodies: Buffer[][] = [[], []];
  const servers = bodies.map((got) =>
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push(Buffer.concat(chunks));
        res.end('{}');
      });
    }),
  );
  for (const s of servers) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const dest = (i: number) => ({
    key: `pb${i}`,
    url: `http://127.0.0.1:${(servers[i]!.address() as AddressInfo).port}/v1/traces`,
    protocol: 'http/protobuf' as const,
    headers: {},
    internalAllowed: true,
  });
  const counts = { exported: 0, dropped: 0 };
  const b = createBroadcaster({
    log: createLogger({ level: 'silent' }),
    installation: dest(0),
    destinationsOf: async () => ({ enabled: true, list: [dest(1)] }),
    cacheMs: 60_000,
    batchSize: 2,
    onSpans: (o) => ('exported' in o ? (counts.exported += o.exported) : (counts.dropped += o.dropped)),
  });
  try {
    await b.flush();
    for (const name of ['one', 'two', 'three']) b.emit('ws', () => ({ ...span, name }));
    await b.flush();
    assert.deepEqual(counts, { exported: 6, dropped: 0 });
    // Two batches each (two spans, then one), the same bytes at both collectors.
    assert.equal(bodies[0]!.length, 2);
    assert.deepEqual(bodies[1], bodies[0]);
    const all = Buffer.concat(bodies[0]!);
    for (const name of ['one', 'two', 'three']) assert.ok(all.includes(Buffer.from(name)));
    assert.ok(all.includes(Buffer.from(span.traceId, 'hex')));
  } finally {
    await b.close();
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  }
});
