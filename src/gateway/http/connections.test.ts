import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { addressKey, guardConnections, type Refused } from './connections.ts';

test('addressKey: IPv4 as is (mapped too), IPv6 by its /64', () => {
  const table: [string | undefined, string][] = [
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, ''],
  ];
  for (const [address, key] of table) assert.equal(addressKey(address), key, address);
});

/** Opens a socket from `from` and resolves once it is closed by the server, or after `ms` with it still open. */
function closedWithin(port: number, from: string, ms: number, send = ''): Promise<{ closed: boolean; socket: Socket }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from }, () => send && socket.write(send));
    socket.on('error', () => {});
    const timer = setTimeout(() => resolve({ closed: false, socket }), ms);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, socket });
    });
  });
}

test('guardConnections: the per-address cap refuses at accept, other addresses still get in; a silent connection is closed after the idle timeout', async () => {
  const server = createServer((_req, res) => res.end('ok'));
  const refused: Refused[] = [];
  guardConnections(server, { max: 100, perAddress: 3, idleTimeoutMs: 400 }, (why) => refused.push(why));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  try {
    const held = await Promise.all([1, 2, 3].map(() => closedWithin(port, '127.0.0.2', 100)));
    assert.deepEqual(
      held.map((h) => h.closed),
      [false, false, false],
    );
    const fourth = await closedWithin(port, '127.0.0.2', 300);
    assert.equal(fourth.closed, true);
    assert.deepEqual(refused, ['address']);
    // Another address answers while 127.0.0.2 is at its cap.
    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(await res.text(), 'ok');
    // The three silent ones are closed by the idle timeout (400 ms after they opened).
    const closed = await Promise.all(held.map((h) => (h.socket.destroyed ? null : once(h.socket, 'close'))));
    assert.equal(closed.length, 3);
    // Once they are gone, 127.0.0.2 is admitted again; a complete request head stops the idle timer.
    const again = await closedWithin(port, '127.0.0.2', 700, 'GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    assert.equal(again.closed, false);
    again.socket.destroy();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('guardConnections: interns on the gateway socket (no address) are not held to the per-address cap', async () => {
  const server = createServer((_req, res) => res.end('ok'));
  guardConnections(server, { max: 100, perAddress: 1, idleTimeoutMs: 5_000 }, () =>
    assert.fail('no intern connection is refused'),
  );
  const dir = mkdtempSync(join(tmpdir(), 'cohort-conn-'));
  const path = join(dir, 'gw.sock');
  const unix = createNetServer((s) => server.emit('connection', s));
  unix.listen(path);
  await once(unix, 'listening');
  try {
    const held = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<Socket>((r) => {
            const s = connect(path, () => r(s));
          }),
      ),
    );
    const res = await new Promise<string>((resolve) => {
      held[0]!.once('data', (d) => resolve(String(d)));
      held[0]!.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    });
    assert.match(res, /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nok$/);
    assert.deepEqual(
      held.map((s) => s.destroyed),
      [false, false, false],
    );
    for (const s of held) s.destroy();
  } finally {
    server.closeAllConnections();
    unix.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('guardConnections: an answer given while the body still comes reaches a client that goes on sending; the connection then lingers, bounded, and runs nothing that arrives meanwhile', async () => {
  const seen: string[] = [];
  // Answers at once, with the connection's close, reading nothing of the body (a refused upload).
  const server = createServer((req, res) => {
    seen.push(req.url!);
    res.writeHead(409, { connection: 'close', 'content-length': '2' });
    res.end('no');
  });
  guardConnections(server, { max: 100, perAddress: 100, idleTimeoutMs: 10_000, lingerMs: 1_500 }, () => {});
  const sockets: Socket[] = [];
  server.on('connection', (s: Socket) => sockets.push(s));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const head = 'PUT /upload HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n';
  const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`;
  try {
    // The client reads nothing until it has sent more after the answer, and the server's end of
    // the connection, were written: a socket closed at once would answer those writes with a
    // reset, and the client would never read the answer.
    const client = connect({ port, host: '127.0.0.1' });
    const errors: string[] = [];
    client.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    const clientClosed = new Promise<void>((resolve) => client.on('close', () => resolve()));
    client.pause();
    client.write(head + chunk);
    await waitUntil(() => sockets.length === 1);
    if (!sockets[0]!.writableFinished) await once(sockets[0]!, 'finish');
    await sleep(50);
    for (let i = 0; i < 16; i++) {
      client.write(chunk);
      await sleep(5);
    }
    // The body ends and a second request follows on the same connection: it is not run.
    client.write('0\r\n\r\nGET /second HTTP/1.1\r\nhost: x\r\n\r\n');
    const got: Buffer[] = [];
    client.on('data', (d: Buffer) => got.push(d));
    client.resume();
    await clientClosed;
    assert.match(Buffer.concat(got).toString(), /^HTTP\/1\.1 409 Conflict\r\n[\s\S]*\r\n\r\nno$/);
    assert.deepEqual(errors, []);
    assert.deepEqual(seen, ['/upload']);

    // A client that goes on sending after the answer, and never ends, is cut off once lingerMs has passed.
    const endless = connect({ port, host: '127.0.0.1' });
    // Its writes fail once it is cut off (events.once would reject on that error).
    endless.on('error', () => {});
    let writing = true;
    const closed = new Promise<void>((resolve) => endless.on('close', () => resolve()));
    endless.on('close', () => (writing = false));
    endless.write(head);
    void (async () => {
      while (writing) {
        endless.write(chunk);
        await sleep(20);
      }
    })();
    await closed;
    assert.deepEqual(seen, ['/upload', '/upload']);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await sleep(5);
}
