// The daemon link's client against real loopback servers: bodies as text and as SSE batches,
// backpressure, aborts and failures at each point, the idle pool, request validation, and TLS.
import { test, before, after, beforeEach, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, Socket, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { H1Client, type H1Options, type H1Request } from './h1.ts';
import { ParseError } from './h1-parser.ts';

let server: Server;
let port = 0;
let origin = '';
/** What the server saw during the current test. */
let seen = { conns: 0, closes: 0, requests: [] as string[], held: (): void => {} };
let open = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await sleep(10);
};
const pad = 'x'.repeat(1000);
const JSON_BODY = '{"ok":true,"text":"héllo"}';

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/json': (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON_BODY),
  '/refused': (_q, res) => res.writeHead(429).end('{"error":"slow down"}'),
  '/events': (_q, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\ndata: skip\n\ndata: 3\n\nda');
    setTimeout(() => res.end('ta: 2\n\ndata: [DONE]\n\n'), 100);
  },
  '/many': (_q, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0; // each event after a 1 KB comment line, so the body takes many reads
    const more = (): void =>
      void (i < 2000 ? (res.write(`: ${pad}\ndata: ${i++}\n\n`) ? more() : res.once('drain', more)) : res.end());
    more();
  },
  '/endless': (_q, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let n = 0;
    const t = setInterval(() => res.write(`data: ${n++}\n\n`), 5);
    res.on('close', () => clearInterval(t));
  },
  '/hold': () => seen.held(),
  '/close': (_q, res) => res.writeHead(200, { connection: 'close' }).end('bye'),
  '/hint2': (_q, res) => res.writeHead(200, { connection: 'keep-alive', 'keep-alive': 'timeout=2' }).end('two'),
  '/hint3': (_q, res) => res.writeHead(200, { connection: 'keep-alive', 'keep-alive': 'timeout=3' }).end('three'),
  '/nohint': (_q, res) => res.writeHead(200, { connection: 'keep-alive' }).end('none'),
  '/v1/echo': (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const h = req.headers;
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          host: h.host,
          length: h['content-length'],
          type: h['content-type'],
          trace: h['x-trace'],
          body,
        }),
      );
    });
  },
};

before(async () => {
  server = createServer((req, res) => {
    seen.requests.push(`${req.method} ${req.url}`);
    if (req.url !== '/v1/echo') req.resume();
    (routes[req.url ?? ''] ?? ((_q, r) => r.writeHead(404).end()))(req, res);
  });
  server.on('connection', (s: Socket) => (seen.conns++, open++, s.once('close', () => (seen.closes++, open--))));
  await once(server.listen(0, '127.0.0.1'), 'listening');
  port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;
});
after(() => (server.closeAllConnections(), server.close()));
beforeEach(async () => {
  server.closeAllConnections();
  await until(() => open === 0); // a close from the test before must not count in this one
  seen = { conns: 0, closes: 0, requests: [], held: () => {} };
});

function setup(t: TestContext, opts?: H1Options) {
  const client = new H1Client(opts);
  t.after(() => client.close());
  const toError = t.mock.fn((err: unknown) => ({ wrapped: (err as Error).message }));
  const send = (
    path: string,
    { signal = new AbortController().signal, base = origin, ...r }: Partial<H1Request> & { signal?: AbortSignal } = {},
  ) => client.request({ base, path, method: 'GET', headers: {}, ...r }, signal, toError);
  return { client, toError, send };
}

async function collect<T>(it: AsyncIterable<T[]>, got: T[][] = []): Promise<T[][]> {
  for await (const b of it) got.push(b);
  return got;
}

test('a body as text, whatever the status', async (t) => {
  const { send } = setup(t);
  const ok = await send('/json');
  assert.deepEqual([ok.statusCode, ok.headers['content-type'], await ok.text()], [200, 'application/json', JSON_BODY]);
  const refused = await send('/refused');
  assert.deepEqual([refused.statusCode, await refused.text()], [429, '{"error":"slow down"}']);
});

test('events arrive mapped, one batch per read, skipped events left out and a split event joined', async (t) => {
  const { send } = setup(t);
  assert.deepEqual(
    await collect((await send('/events')).events((d) => (d === 'skip' || d === '[DONE]' ? null : Number(d)))),
    [[1, 3], [2]],
  );
});

test('a consumer slower than the server gets every event in order, the socket paused meanwhile', async (t) => {
  const { send } = setup(t);
  const pause = Socket.prototype.pause;
  let pauses = 0; // the client's socket, told apart by its peer's port while it is open
  t.mock.method(Socket.prototype, 'pause', function (this: Socket) {
    if (this.remotePort === port) pauses++;
    return pause.call(this);
  });
  const res = await send('/many');
  const got: number[] = [];
  for await (const batch of res.events(Number)) {
    got.push(...batch);
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(
    got,
    Array.from({ length: 2000 }, (_, i) => i),
  );
  assert.ok(pauses > 0, 'the client socket was never paused');
});

test('an abort before the head rejects with the abort reason and closes the connection', async (t) => {
  const { send, toError } = setup(t);
  const gone = new Error('client went away');
  await assert.rejects(send('/json', { signal: AbortSignal.abort(gone) }), (e) => e === gone);
  const ac = new AbortController();
  const held = new Promise<void>((r) => (seen.held = r));
  const pending = send('/hold', { signal: ac.signal });
  await held;
  ac.abort(gone);
  await assert.rejects(pending, (e) => e === gone);
  await until(() => seen.closes === 1);
  assert.deepEqual(
    { ...seen, held: 0, mapped: toError.mock.callCount() },
    { conns: 1, closes: 1, requests: ['GET /hold'], held: 0, mapped: 0 },
  );
});

test('an abort mid-stream ends the events with the abort reason, closes the connection, and the socket is not reused', async (t) => {
  const { send, toError } = setup(t);
  const ac = new AbortController();
  const it = (await send('/endless', { signal: ac.signal })).events(Number)[Symbol.asyncIterator]();
  const got: number[] = [...((await it.next()).value as number[])];
  const gone = new Error('client went away');
  ac.abort(gone);
  await assert.rejects(
    async () => {
      for (let r = await it.next(); !r.done; r = await it.next()) got.push(...r.value);
    },
    (e) => e === gone,
  );
  assert.deepEqual(
    got,
    Array.from({ length: got.length }, (_, i) => i),
  );
  await until(() => seen.closes === 1);
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  assert.deepEqual([seen.conns, seen.closes, toError.mock.callCount()], [2, 1, 0]);
});

test('a consumer that stops iterating gives the connection up', async (t) => {
  const { send } = setup(t);
  for await (const batch of (await send('/endless')).events(Number)) if (batch[0] === 0) break;
  await until(() => seen.closes === 1);
  assert.deepEqual([seen.conns, seen.closes], [1, 1]);
});

test('a refused connection rejects with the caller’s mapping of the error', async (t) => {
  const { send, toError } = setup(t);
  const gone = createServer();
  await once(gone.listen(0, '127.0.0.1'), 'listening');
  const free = (gone.address() as AddressInfo).port;
  await new Promise((r) => gone.close(r));
  await assert.rejects(send('/', { base: `http://127.0.0.1:${free}` }), {
    wrapped: `connect ECONNREFUSED 127.0.0.1:${free}`,
  });
  assert.deepEqual(
    toError.mock.calls.map((c) => (c.arguments[0] as NodeJS.ErrnoException).code),
    ['ECONNREFUSED'],
  );
});

test('a server that closes mid-body fails the events with the mapped error, after what did arrive', async (t) => {
  const raw = createNetServer((s) =>
    s.once('data', () =>
      s.end('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\ndata: a\n\n'),
    ),
  );
  await once(raw.listen(0, '127.0.0.1'), 'listening');
  t.after(() => raw.close());
  const { send, toError } = setup(t);
  const res = await send('/', { base: `http://127.0.0.1:${(raw.address() as AddressInfo).port}` });
  const got: string[][] = [];
  await assert.rejects(
    collect(
      res.events((d) => d),
      got,
    ),
    { wrapped: 'the connection closed before the response ended' },
  );
  assert.deepEqual([got, toError.mock.calls.map((c) => c.arguments[0] instanceof ParseError)], [[['a']], [true]]);
});

test('sequential requests share one connection; not after connection: close', async (t) => {
  const { send } = setup(t);
  for (const path of ['/json', '/json', '/refused']) await (await send(path)).text();
  assert.deepEqual([seen.conns, seen.requests], [1, ['GET /json', 'GET /json', 'GET /refused']]);
  assert.equal(await (await send('/close')).text(), 'bye'); // on the pooled connection, which then closes
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  assert.deepEqual([seen.conns, seen.requests.length], [2, 5]);
});

test('the server’s keep-alive hint, less 2 s, decides how long a socket is kept; without one, idleMs does', async (t) => {
  const { send } = setup(t, { idleMs: 30 });
  for (const path of ['/hint2', '/hint2']) await (await send(path)).text(); // 2 s - 2 s: not kept at all
  assert.equal(seen.conns, 2);
  await (await send('/nohint')).text(); // kept 30 ms
  await sleep(80);
  await (await send('/hint3')).text(); // a new connection, kept 1 s
  await sleep(80);
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  assert.equal(seen.conns, 4);
});

test('a silence times a request out on a reused socket too, after the socket sat idle past the timeout', async (t) => {
  const { send, toError } = setup(t, { timeoutMs: 50 });
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  // Idle in the pool past the timeout (the server's hint keeps it for 3 s): the socket's timeout fires with no call.
  await sleep(150);
  await assert.rejects(send('/hold'), { wrapped: 'no answer in time' });
  assert.deepEqual([seen.conns, seen.requests], [1, ['GET /json', 'GET /hold']]);
  assert.equal((toError.mock.calls[0]!.arguments[0] as { code?: string }).code, 'ETIMEDOUT');
});

test('an idle socket past its time is closed within a sweep, though no request comes to take it', async (t) => {
  const { send } = setup(t, { idleMs: 30 });
  await (await send('/nohint')).text();
  assert.equal(seen.closes, 0);
  await until(() => seen.closes === 1); // up to 2 s
  assert.deepEqual([seen.conns, seen.closes], [1, 1]);
});

test('an idle socket the server closed is not reused', async (t) => {
  const { send } = setup(t);
  await (await send('/json')).text();
  server.closeIdleConnections();
  await until(() => seen.closes === 1);
  await sleep(20);
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  assert.deepEqual([seen.conns, seen.closes], [2, 1]);
});

test('a base URL with a path prefix, and the request line and headers as sent', async (t) => {
  const { send } = setup(t);
  const res = await send('/echo', {
    base: `${origin}/v1/`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-trace': 'abc' },
    body: '{"é":1}',
  });
  assert.deepEqual(JSON.parse(await res.text()), {
    method: 'POST',
    url: '/v1/echo',
    host: `127.0.0.1:${port}`,
    length: '8',
    type: 'application/json',
    trace: 'abc',
    body: '{"é":1}',
  });
});

test('CR/LF in a header or a space in the path is refused through toError, and nothing is sent', async (t) => {
  const { send, toError } = setup(t);
  await (await send('/json')).text();
  await assert.rejects(send('/json', { headers: { 'x-a': 'b\r\nx-evil: 1' } }), { wrapped: 'invalid header x-a' });
  await assert.rejects(send('/json', { headers: { 'x-a\r\nx-evil': '1' } }), {
    wrapped: 'invalid header x-a\r\nx-evil',
  });
  await assert.rejects(send('/json HTTP/1.1\r\nx-evil: 1\r\n\r\nGET /json'), { wrapped: 'invalid request path' });
  await assert.rejects(send('/a b'), { wrapped: 'invalid request path' });
  assert.equal(await (await send('/json')).text(), JSON_BODY);
  assert.deepEqual([seen.conns, seen.requests, toError.mock.callCount()], [1, ['GET /json', 'GET /json'], 4]);
});

const openssl = spawnSync('openssl', ['version']).status === 0;
test('https with a private CA, and a certificate it does not trust refused', async (t) => {
  if (!openssl) return t.skip('openssl is not on PATH');
  const dir = mkdtempSync(join(tmpdir(), 'cohort-h1-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const args = [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
  ];
  const gen = spawnSync('openssl', [
    ...args,
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
  ]);
  assert.equal(gen.status, 0, String(gen.stderr));
  const cert = readFileSync(join(dir, 'cert.pem'));
  const tls = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (_q, res) => res.end('secret'));
  await once(tls.listen(0, '127.0.0.1'), 'listening');
  t.after(() => (tls.closeAllConnections(), tls.close()));
  const base = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  const trusted = setup(t, { tls: { ca: cert } });
  assert.equal(await (await trusted.send('/', { base })).text(), 'secret');
  const strict = setup(t);
  await assert.rejects(strict.send('/', { base }), { wrapped: 'self-signed certificate' });
  assert.equal(
    (strict.toError.mock.calls[0]!.arguments[0] as NodeJS.ErrnoException).code,
    'DEPTH_ZERO_SELF_SIGNED_CERT',
  );
});
