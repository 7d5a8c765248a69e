// The response parser as the daemon link feeds it: whole responses, the same bytes one at a time,
// and generated responses split at arbitrary points. Bytes are latin1 strings so they stay exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ParseError, ResponseParser, type ResponseHead } from './h1-parser.ts';

type Outcome = { heads: ResponseHead[]; body: string; order: string; reusable: boolean; done: boolean; error?: string };

/** Feeds `pieces` (then eof() if asked) and records what came out; `order` collapses runs of data. */
function run(pieces: Buffer[], eof = false): Outcome {
  const heads: ResponseHead[] = [];
  const body: Buffer[] = [];
  const order: string[] = [];
  const note = (e: string) => (e === 'data' && order.at(-1) === 'data') || order.push(e);
  const p = new ResponseParser({
    head: (h) => (heads.push(h), note('head')),
    data: (c) => (body.push(Buffer.from(c)), note('data')),
    end: () => note('end'),
  });
  let error: string | undefined;
  try {
    for (const piece of pieces) p.feed(piece);
    if (eof) p.eof();
  } catch (err) {
    if (!(err instanceof ParseError)) throw err;
    error = err.message;
  }
  return {
    heads,
    body: Buffer.concat(body).toString('latin1'),
    order: order.join(' '),
    reusable: p.reusableAfterEnd,
    done: p.done,
    ...(error === undefined ? {} : { error }),
  };
}

/** The same bytes whole, and in pieces of one byte (1 KiB for large inputs, whose head is re-joined on each feed). */
function splits(wire: string): Buffer[][] {
  const b = Buffer.from(wire, 'latin1');
  const step = b.length > 4096 ? 1024 : 1;
  const pieces: Buffer[] = [];
  for (let i = 0; i < b.length; i += step) pieces.push(b.subarray(i, i + step));
  return [[b], pieces];
}

const head = (status: number, headers: Record<string, string>, keepAlive = true): ResponseHead => ({
  status,
  headers,
  keepAlive,
});
const ok = (headers: Record<string, string>, body: string, o: Partial<Outcome> = {}): Omit<Outcome, 'error'> => ({
  heads: [head(200, headers)],
  body,
  order: body ? 'head data end' : 'head end',
  reusable: true,
  done: true,
  ...o,
});
const fails = (error: string, o: Partial<Outcome> = {}): Outcome => ({
  heads: [],
  body: '',
  order: '',
  reusable: false,
  done: false,
  error,
  ...o,
});

const rows: [name: string, wire: string, expected: Outcome, eof?: boolean][] = [
  [
    'a content-length body',
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello',
    ok({ 'content-type': 'text/plain', 'content-length': '5' }, 'hello'),
  ],
  ['a zero-length body', 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n', ok({ 'content-length': '0' }, '')],
  [
    'chunked, with extensions, upper-case hex and trailers',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val\r\nhello\r\n1 ; a="b;c"\r\n \r\nA\r\n0123456789\r\n0\r\nX-Sum: 1\r\nX-Other: 2\r\n\r\n',
    ok({ 'transfer-encoding': 'chunked' }, 'hello 0123456789'),
  ],
  [
    'chunked with bare LF framing lines',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\nhi\n0\n\n',
    ok({ 'transfer-encoding': 'chunked' }, 'hi'),
  ],
  [
    'a 204 has no body',
    'HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n',
    { heads: [head(204, { date: 'x' })], body: '', order: 'head end', reusable: true, done: true },
  ],
  [
    'a 304 has no body, whatever its content-length says',
    'HTTP/1.1 304 Not Modified\r\ncontent-length: 5\r\n\r\n',
    { heads: [head(304, { 'content-length': '5' })], body: '', order: 'head end', reusable: true, done: true },
  ],
  [
    'a close-delimited body ends at eof and is not reusable',
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil\r\nclose',
    ok({ 'content-type': 'text/plain' }, 'until\r\nclose', { reusable: false }),
    true,
  ],
  [
    'a close-delimited body has not ended before eof',
    'HTTP/1.1 200 OK\r\n\r\npartial',
    ok({}, 'partial', { order: 'head data', done: false, reusable: false }),
  ],
  [
    'HTTP/1.0 with keep-alive',
    'HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok',
    ok({ connection: 'Keep-Alive', 'content-length': '2' }, 'ok'),
  ],
  [
    'HTTP/1.0 without keep-alive',
    'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok',
    ok({ 'content-length': '2' }, 'ok', { heads: [head(200, { 'content-length': '2' }, false)], reusable: false }),
  ],
  [
    'HTTP/1.0, close-delimited',
    'HTTP/1.0 200\r\n\r\nabc',
    ok({}, 'abc', { heads: [head(200, {}, false)], reusable: false }),
    true,
  ],
  [
    'connection: close',
    'HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nok',
    ok({ connection: 'Close', 'content-length': '2' }, 'ok', {
      heads: [head(200, { connection: 'Close', 'content-length': '2' }, false)],
      reusable: false,
    }),
  ],
  [
    'an interim 100 before the real response',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok',
    ok({ 'content-length': '2' }, 'ok', { heads: [head(201, { 'content-length': '2' })] }),
  ],
  [
    'duplicate headers joined, names lower-cased, values trimmed',
    'HTTP/1.1 404 Not Found\r\nSet-Cookie: a=1\r\nset-cookie:b=2 \r\nX-E:\r\ncontent-length: 0\r\n\r\n',
    {
      heads: [head(404, { 'set-cookie': 'a=1, b=2', 'x-e': '', 'content-length': '0' })],
      body: '',
      order: 'head end',
      reusable: true,
      done: true,
    },
  ],
  [
    'header names that are Object.prototype members',
    'HTTP/1.1 200 OK\r\nConstructor: c\r\ncontent-length: 0\r\n\r\n',
    ok({ constructor: 'c', 'content-length': '0' }, ''),
  ],
  ['malformed status line: HTTP/2', 'HTTP/2 200 OK\r\n\r\n', fails('malformed status line')],
  ['malformed status line: two-digit status', 'HTTP/1.1 20 OK\r\n\r\n', fails('malformed status line')],
  ['malformed status line: no space before the reason', 'HTTP/1.1 200OK\r\n\r\n', fails('malformed status line')],
  ['malformed header: no colon', 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', fails('malformed header line')],
  ['malformed header: empty name', 'HTTP/1.1 200 OK\r\n: x\r\n\r\n', fails('malformed header line')],
  [
    'malformed chunk size',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n',
    fails('invalid chunk size', { heads: [head(200, { 'transfer-encoding': 'chunked' })], order: 'head' }),
  ],
  [
    'negative chunk size',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\n',
    fails('invalid chunk size', { heads: [head(200, { 'transfer-encoding': 'chunked' })], order: 'head' }),
  ],
  [
    'chunk data longer than its size',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n',
    fails('missing CRLF after chunk data', {
      heads: [head(200, { 'transfer-encoding': 'chunked' })],
      body: 'ab',
      order: 'head data',
    }),
  ],
  ['malformed content-length', 'HTTP/1.1 200 OK\r\ncontent-length: 5x\r\n\r\n', fails('invalid content-length')],
  ['negative content-length', 'HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', fails('invalid content-length')],
  [
    'two content-lengths',
    'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nok',
    fails('invalid content-length'),
  ],
  [
    'a head over 64 KiB without its end',
    `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(64 * 1024)}`,
    fails('response head too large'),
  ],
  [
    'a head over 64 KiB with its end',
    `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
    fails('response head too large'),
  ],
  [
    'bytes after the end: the response is whole, the connection not reusable',
    'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1',
    ok({ 'content-length': '2' }, 'ok', { reusable: false }),
  ],
  [
    'eof mid-body',
    'HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc',
    fails('the connection closed before the response ended', {
      heads: [head(200, { 'content-length': '10' })],
      body: 'abc',
      order: 'head data',
    }),
    true,
  ],
  [
    'eof mid-chunk',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab',
    fails('the connection closed before the response ended', {
      heads: [head(200, { 'transfer-encoding': 'chunked' })],
      body: 'ab',
      order: 'head data',
    }),
    true,
  ],
  ['eof mid-head', 'HTTP/1.1 200 OK\r\ncontent-le', fails('the connection closed before the response ended'), true],
];

for (const [name, wire, expected, eof] of rows) {
  test(name, () => {
    for (const pieces of splits(wire)) assert.deepEqual(run(pieces, eof), expected, `in ${pieces.length} piece(s)`);
  });
}

test('eof after a response that ended on its framing ends nothing twice', () => {
  let ends = 0;
  const p = new ResponseParser({ head: () => {}, data: () => {}, end: () => ends++ });
  p.feed(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx'));
  p.feed(Buffer.alloc(0));
  p.eof();
  assert.deepEqual({ ends, done: p.done, reusable: p.reusableAfterEnd }, { ends: 1, done: true, reusable: true });
});

// ---- generated responses, split anywhere ----
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection']);
const headerName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,12}$/).filter((n) => !FRAMING.has(n.toLowerCase()));
const headerValue = fc.stringMatching(/^([!-~]([ -~]{0,20}[!-~])?)?$/);
const response = fc.record({
  status: fc.integer({ min: 200, max: 599 }).filter((s) => s !== 204 && s !== 304),
  reason: fc.stringMatching(/^[ -~]{0,12}$/),
  version: fc.constantFrom('1.0', '1.1'),
  connection: fc.constantFrom(undefined, 'close', 'keep-alive'),
  interim: fc.boolean(),
  headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }),
  chunks: fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 8 }),
  chunked: fc.boolean(),
  ext: fc.constantFrom('', ';a=1', ' ; q="x"'),
  trailers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 2 }),
  cuts: fc.array(fc.nat(), { maxLength: 12 }),
});

test('any response, split anywhere, yields its head, its body bytes, one end, and whether the connection is reusable', () => {
  fc.assert(
    fc.property(response, (r) => {
      const body = Buffer.concat(r.chunks);
      const headers: Record<string, string> = {};
      let wire = r.interim ? 'HTTP/1.1 100 Continue\r\n\r\n' : '';
      wire += `HTTP/${r.version} ${r.status}${r.reason ? ` ${r.reason}` : ''}\r\n`;
      const framing: [string, string][] = [
        r.chunked ? ['Transfer-Encoding', 'chunked'] : ['Content-Length', String(body.length)],
      ];
      if (r.connection) framing.push(['Connection', r.connection]);
      for (const [k, v] of [...r.headers, ...framing]) {
        wire += `${k}: ${v}\r\n`;
        const n = k.toLowerCase();
        headers[n] = Object.hasOwn(headers, n) ? `${headers[n]}, ${v}` : v;
      }
      const parts: Uint8Array[] = [Buffer.from(`${wire}\r\n`, 'latin1')];
      if (!r.chunked) parts.push(body);
      else {
        for (const c of r.chunks.filter((c) => c.length))
          parts.push(Buffer.from(`${c.length.toString(16)}${r.ext}\r\n`), c, Buffer.from('\r\n'));
        parts.push(Buffer.from(`0${r.ext}\r\n${r.trailers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1'));
      }
      const bytes = Buffer.concat(parts);
      const at = [...new Set(r.cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      const pieces = [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? bytes.length));
      const keepAlive = r.version === '1.1' ? r.connection !== 'close' : r.connection === 'keep-alive';
      assert.deepEqual(run(pieces), {
        heads: [head(r.status, headers, keepAlive)],
        body: body.toString('latin1'),
        order: body.length ? 'head data end' : 'head end',
        reusable: keepAlive,
        done: true,
      });
    }),
    { numRuns: 300 },
  );
});
