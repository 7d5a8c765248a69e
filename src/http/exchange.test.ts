import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { exchange } from './exchange.ts';

let server: Server;
let origin = '';
const closed: string[] = [];
const dispatcher = new Agent({ keepAliveTimeout: 1000 });
const routes: Record<string, (res: ServerResponse) => void> = {
  '/json': (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"text":"héllo"}'),
  '/refused': (res) => res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}'),
  '/events': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\ndata: skip\n\nda');
    setTimeout(() => res.end('ta: 2\n\ndata: [DONE]\n\n'), 20);
  },
  '/many': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const more = () => {
      while (i < 2000) if (!res.write(`data: ${i++}\n\n`)) return void res.once('drain', more);
      res.end();
    };
    more();
  },
  '/endless': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const t = setInterval(() => res.write('data: tick\n\n'), 5);
    res.on('close', () => {
      clearInterval(t);
      closed.push('endless');
    });
  },
};

before(async () => {
  server = createServer((req, res) => {
    req.resume();
    routes[req.url ?? '']!(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await dispatcher.close();
  server.closeAllConnections();
  server.close();
});

const wrap = (err: unknown) => ({ wrapped: (err as Error).message });
const post = (path: string, signal = new AbortController().signal) => exchange(dispatcher, { origin, path, method: 'POST', body: '{}' }, signal, wrap);

async function collect<T>(it: AsyncIterable<T[]>): Promise<T[][]> {
  const out: T[][] = [];
  for await (const b of it) out.push(b);
  return out;
}

test('a body as text, whatever the status', async () => {
  const ok = await post('/json');
  assert.equal(ok.statusCode, 200);
  assert.equal(await ok.text(), '{"ok":true,"text":"héllo"}');
  const refused = await post('/refused');
  assert.equal(refused.statusCode, 429);
  assert.equal(await refused.text(), '{"error":{"message":"slow down"}}');
});

test('events arrive mapped, in batches per read, with skipped events left out and split events joined', async () => {
  const res = await post('/events');
  const batches = await collect(res.events((d) => (d === 'skip' || d === '[DONE]' ? null : Number(d))));
  assert.deepEqual(batches.flat(), [1, 2]);
  assert.ok(batches.every((b) => b.length > 0));
});

test('a consumer slower than the provider gets every event in order (the socket is paused, not buffered without end)', async () => {
  const res = await post('/many');
  const seen: number[] = [];
  for await (const batch of res.events(Number)) {
    seen.push(...batch);
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(seen, Array.from({ length: 2000 }, (_, i) => i));
});

test('aborting the signal closes the provider connection and ends the events with the abort', async () => {
  const ac = new AbortController();
  const res = await post('/endless', ac.signal);
  const it = res.events((d) => d)[Symbol.asyncIterator]();
  assert.deepEqual((await it.next()).value, ['tick']);
  ac.abort(new Error('client went away'));
  await assert.rejects(async () => {
    for (;;) if ((await it.next()).done) break;
  }, { wrapped: 'client went away' });
  for (let i = 0; i < 50 && !closed.includes('endless'); i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(closed, ['endless']);
});

test('an event the mapping refuses fails the stream with the mapping error', async () => {
  const res = await post('/events');
  await assert.rejects(
    collect(
      res.events((d) => {
        if (d === 'skip') throw new Error('malformed event');
        return d;
      }),
    ),
    /malformed event/,
  );
});

test('a provider that cannot be reached rejects with the caller’s error', async () => {
  const gone = createServer().listen(0, '127.0.0.1');
  await once(gone, 'listening');
  const port = (gone.address() as AddressInfo).port;
  await new Promise((r) => gone.close(r));
  const refused = new Agent({ connect: { timeout: 1000 } });
  await assert.rejects(exchange(refused, { origin: `http://127.0.0.1:${port}`, path: '/', method: 'POST', body: '{}' }, new AbortController().signal, wrap), { wrapped: `connect ECONNREFUSED 127.0.0.1:${port}` });
  await refused.close();
});
