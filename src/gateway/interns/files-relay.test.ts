// The relay of a folder's download, over real sockets: a Unix socket as GNU tar's end and an HTTP
// response to a client, as the route sends it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { BufferPool, Relay, type Sending } from './files-relay.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A source that writes `data` and ends, or (endless) writes for as long as it is read, to a
 * relay's socket; `closed` settles when the relay's end has closed it. */
async function source(o: { data?: Buffer; endless?: true; pool: BufferPool; aheadBytes: number }) {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-relay-'));
  const path = join(dir, 's');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const relay = new Relay({ pool: o.pool, aheadBytes: o.aheadBytes });
  const socket = connect({ path, onread: relay.onread });
  await once(socket, 'connect');
  relay.attach(socket);
  const [peer] = await accepted;
  server.close();
  rmSync(dir, { recursive: true, force: true });
  peer.on('error', () => {});
  const closed = new Promise((resolve) => peer.once('close', resolve));
  if (o.data) peer.end(o.data);
  else {
    // More than a loopback connection's buffers hold (tcp_rmem may let them grow to 32 MiB).
    const chunk = randomBytes(1 << 20);
    const more = () => {
      while (!peer.destroyed && peer.write(chunk));
    };
    peer.on('drain', more);
    more();
  }
  return { relay, closed, socket };
}

/** An HTTP server whose one response is the relay's; `get` reads it as `read` says. */
async function serve(send: (res: ServerResponse) => void) {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-tar' });
    send(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  return { url, close: () => server.close() };
}

/** The body as a client reads it, slowly if `slowMs` (a pause after each chunk): whether it came
 * whole (ended, not aborted). */
function download(url: string, o: { slowMs?: number; stopAfterFirst?: boolean } = {}) {
  return new Promise<{ body: Buffer; complete: boolean; res: IncomingMessage }>((resolve, reject) => {
    get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        if (o.stopAfterFirst && chunks.length === 1) {
          res.pause();
          resolve({ body: Buffer.concat(chunks), complete: false, res });
        } else if (o.slowMs && !o.stopAfterFirst) {
          res.pause();
          setTimeout(() => res.resume(), o.slowMs);
        }
      });
      res.on('error', () => {});
      res.once('close', () => resolve({ body: Buffer.concat(chunks), complete: res.complete, res }));
    }).once('error', reject);
  });
}

const sending = (o: Partial<Sending> = {}): Sending & { failures: string[] } => {
  const failures: string[] = [];
  return {
    maxBytes: 1 << 30,
    idleMs: 60_000,
    ended: Promise.resolve(null),
    failed: (e) => failures.push(e.message),
    failures,
    ...o,
  };
};

test('what was read ahead and what comes after reach a slow client byte for byte, through buffers reused once written', async () => {
  // Small buffers, few kept, a client that pauses: a buffer reused before the response wrote it
  // would show in the digest.
  const pool = new BufferPool({ bytes: 16 << 10, keep: 8 });
  const data = randomBytes(6 << 20);
  const { relay, closed } = await source({ data, pool, aheadBytes: 1 << 20 });
  await sleep(200); // the read-ahead fills to its bound, and reading stops
  const s = sending();
  const http = await serve((res) => relay.send(res, s));
  try {
    const got = await download(http.url, { slowMs: 2 });
    assert.equal(got.complete, true);
    assert.equal(got.body.length, data.length);
    assert.equal(sha(got.body), sha(data));
    await closed;
    assert.deepEqual(s.failures, []);
    // Back in the pool, no more than it keeps.
    assert.equal(pool.idle, 8);
  } finally {
    http.close();
  }
});

test('a source that ends while it is read ahead is sent whole; one refused is dropped and stopped', async () => {
  const pool = new BufferPool({ bytes: 64 << 10, keep: 4 });
  const small = Buffer.from('a small folder');
  const early = await source({ data: small, pool, aheadBytes: 1 << 20 });
  await sleep(100);
  const http = await serve((res) => early.relay.send(res, sending()));
  try {
    const got = await download(http.url);
    assert.deepEqual([got.complete, got.body.toString()], [true, 'a small folder']);
  } finally {
    http.close();
  }
  const refused = await source({ endless: true, pool, aheadBytes: 1 << 20 });
  await sleep(50);
  refused.relay.drop();
  await refused.closed;
  assert.equal(refused.socket.destroyed, true);
});

test('once begun, a download past its bound, whose source did not end well, or whose client reads nothing is aborted, its source stopped', async () => {
  const pool = new BufferPool({ bytes: 64 << 10, keep: 4 });
  const cases: {
    name: string;
    s: Sending & { failures: string[] };
    data?: Buffer;
    client?: { stopAfterFirst: true };
    why: string;
  }[] = [
    {
      name: 'past the bound',
      s: sending({ maxBytes: 1 << 20 }),
      why: 'the tar stream passed 1048576 bytes (COHORT_FILES_MAX_MB) while it was sent',
    },
    {
      name: 'a source that failed',
      s: sending({ ended: Promise.resolve(new Error('the tar stream failed while it was sent (tar exited 2)')) }),
      data: randomBytes(1 << 20),
      why: 'the tar stream failed while it was sent (tar exited 2)',
    },
    {
      name: 'a client that reads nothing',
      s: sending({ idleMs: 300 }),
      client: { stopAfterFirst: true },
      why: 'the client took nothing of the download for 300 ms (COHORT_FILES_IDLE_MS)',
    },
  ];
  for (const c of cases) {
    const src = await source(
      c.data ? { data: c.data, pool, aheadBytes: 1 << 20 } : { endless: true, pool, aheadBytes: 1 << 20 },
    );
    const http = await serve((res) => src.relay.send(res, c.s));
    try {
      const got = await download(http.url, c.client ?? {});
      await src.closed;
      assert.deepEqual(c.s.failures, [c.why], c.name);
      // No buffer is in the pool twice (two downloads would read into one).
      const taken = Array.from({ length: pool.idle }, () => pool.take());
      assert.equal(new Set(taken).size, taken.length, c.name);
      for (const b of taken) pool.give(b);
      if (c.client) {
        // What the client reads from now on ends short: the response was aborted.
        const aborted = await new Promise<boolean>((resolve) => {
          got.res.once('close', () => resolve(!got.res.complete));
          got.res.resume();
        });
        assert.equal(aborted, true, c.name);
      } else assert.equal(got.complete, false, c.name);
    } finally {
      http.close();
    }
  }
});

test('a client that goes away stops the source, and is no failure of the download', async () => {
  const pool = new BufferPool({ bytes: 64 << 10, keep: 4 });
  const src = await source({ endless: true, pool, aheadBytes: 1 << 20 });
  const s = sending();
  const http = await serve((res) => src.relay.send(res, s));
  try {
    const got = await download(http.url, { stopAfterFirst: true });
    assert.ok(got.body.length > 0);
    got.res.destroy();
    await src.closed;
    assert.deepEqual(s.failures, []);
  } finally {
    http.close();
  }
});
