// The SSE decoder against eventsource-parser 3.1.1 fed through a streaming TextDecoder (the oracle):
// a table of edge cases fed whole and a byte at a time, and generated event streams split anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createParser } from 'eventsource-parser';
import { SseDecoder } from './sse-decoder.ts';

function decode(pieces: Buffer[]): string[] {
  const out: string[] = [];
  const d = new SseDecoder((data) => out.push(data));
  for (const piece of pieces) d.feed(piece);
  return out;
}

function oracle(pieces: Buffer[]): string[] {
  const out: string[] = [];
  const p = createParser({ onEvent: (e) => out.push(e.data) });
  const text = new TextDecoder();
  for (const piece of pieces) p.feed(text.decode(piece, { stream: true }));
  return out;
}

const bytes = (b: Buffer) => Array.from(b, (_, i) => b.subarray(i, i + 1));

// [name, input, data handed on when fed whole, the same fed a byte at a time if different]
const cases: [string, string | Buffer, string[], string[]?][] = [
  ['one event', 'data: hello\n\n', ['hello']],
  ['data lines joined by LF', 'data: a\ndata: b\n\n', ['a\nb']],
  ['one leading space dropped', 'data:a\n\ndata:  b\n\n', ['a', ' b']],
  ['colons in the value', 'data: a:b: c\n\n', ['a:b: c']],
  ['bare data and empty data', 'data\n\ndata:\n\ndata\ndata: \n\n', ['', '', '\n']],
  ['blank lines without data', '\n\n\nevent: x\n\nid: 1\n\n', []],
  ['other fields ignored', 'event: e\nid: 7\nretry: 10\nretry: x\nfoo: bar\ndata: x\n\n', ['x']],
  ['lines without colon', 'foo\ndata x\ndatax\ndat\ndata: y\n\n', ['y']],
  ['not a data field', 'data : x\ndatax: y\nDATA: z\n\n', []],
  ['comments', ': hi\n:data: x\n:\ndata: y\n: bye\n\n', ['y']],
  ['CRLF', 'data: a\r\ndata: b\r\n\r\n', ['a\nb']],
  ['CR', 'data: a\rdata: b\r\rdata: c\r\rx', ['a\nb', 'c'], ['a\nb']],
  ['mixed endings', 'data: a\r\n\rdata: b\n\r\ndata: c\r\r\n', ['a', 'b', 'c']],
  ['CR LF is one line ending', 'data: a\r\ndata: b\n\n', ['a\nb']],
  ['CR CR is two', 'data: a\r\rdata: b\n\n', ['a', 'b']],
  ['a blank line ending in the last CR waits', 'data: a\n\r', []],
  ['... for a later chunk with a line break', 'data: a\n\rdata: b\n', ['a']],
  ['... and fed whole, a byte after it is enough', 'data: a\n\rx', ['a'], []],
  ['... also one starting a character', 'data: a\n\r\u00e9', ['a'], []],
  ['unterminated data never handed on', 'data: a\n\ndata: b\n', ['a']],
  ['unterminated line', 'data: a\n\ndata: b', ['a']],
  [
    'unicode',
    'data: h\u00e9llo \u20ac \u{1F600}\ndata: \u{10FFFF}\u4e2d\n\n',
    ['h\u00e9llo \u20ac \u{1F600}\n\u{10FFFF}\u4e2d'],
  ],
  ['a leading BOM stripped', '\uFEFFdata: a\n\n', ['a']],
  ['a BOM then a blank line', '\uFEFF\r\ndata: a\n\n', ['a']],
  ['only one BOM stripped', '\uFEFF\uFEFFdata: a\n\ndata: b\n\n', ['b']],
  ['a BOM later is text', 'data: a\n\n\uFEFFdata: b\n\ndata: \uFEFF\n\n', ['a', '\uFEFF']],
  [
    'invalid UTF-8',
    Buffer.from('data: \xff\xe2\x82\n\ndata: \xed\xa0\x80\xc0\n\n', 'latin1'),
    ['\uFFFD\uFFFD', '\uFFFD\uFFFD\uFFFD\uFFFD'],
  ],
  ['an event per line ending style', Buffer.from('data: 1\n\ndata: 2\r\rdata: 3\r\n\r\n'), ['1', '2', '3']],
];

for (const [name, input, whole, byByte = whole] of cases) {
  test(`table: ${name}`, () => {
    const b = typeof input === 'string' ? Buffer.from(input) : input;
    assert.deepEqual(decode([b]), whole, 'whole');
    assert.deepEqual(decode(bytes(b)), byByte, 'a byte at a time');
    assert.deepEqual(oracle([b]), whole, 'oracle, whole');
    assert.deepEqual(oracle(bytes(b)), byByte, 'oracle, a byte at a time');
  });
}

test('a line ending split across chunks, and lines across many chunks', () => {
  const pieces = ['data: a\r', '\ndata: b\r', '\r', 'data: ', '\u20ac\n', '\n'].map((s) => Buffer.from(s));
  assert.deepEqual(decode(pieces), ['a\nb', '\u20ac']);
  const euro = Buffer.from('data: \u20ac\n\n');
  assert.deepEqual(decode([euro.subarray(0, 7), euro.subarray(7, 8), euro.subarray(8)]), ['\u20ac']);
});

// Generated streams: any unicode, several data lines, other fields, comments, lines without colon,
// any line ending per line, an optional BOM and trailing incomplete event, split at any byte.
const text = fc
  .oneof(
    { weight: 5, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
    fc.string({ unit: 'binary', minLength: 40, maxLength: 120 }),
  )
  .map((s) => s.replace(/[\r\n]/g, ''));
const name = fc.oneof(
  fc.constantFrom('data', 'event', 'id', 'retry', 'dat', 'data ', 'datax', 'Data', ''),
  text.map((s) => s.replace(/:/g, '')),
);
const line = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom('data:', 'data: ', 'data:  '), text).map(([f, v]) => f + v) },
  fc.constant('data'),
  fc.tuple(fc.constantFrom('event', 'id', 'retry'), fc.constantFrom(':', ': '), text).map(([f, c, v]) => f + c + v),
  text.map((v) => ':' + v),
  name,
  fc.tuple(name, text).map(([f, v]) => `${f}:${v}`),
);
const ending = fc.constantFrom('\n', '\r', '\r\n');
const lines = (max: number) =>
  fc.array(fc.tuple(line, ending), { maxLength: max }).map((ls) => ls.map(([l, e]) => l + e).join(''));
const stream = fc
  .tuple(fc.boolean(), fc.array(fc.tuple(lines(4), ending), { maxLength: 6 }), lines(2), fc.option(line))
  .map(
    ([bom, events, tail, last]) =>
      (bom ? '\uFEFF' : '') + events.map(([ls, blank]) => ls + blank).join('') + tail + (last ?? ''),
  );
const split = fc.oneof(fc.array(fc.nat(), { maxLength: 30 }), fc.constant(null));

test('generated streams split anywhere decode as eventsource-parser does', () => {
  fc.assert(
    fc.property(stream, split, (s, cuts) => {
      const b = Buffer.from(s);
      const at = cuts === null ? null : [...new Set(cuts.map((c) => c % (b.length + 1)))].sort((x, y) => x - y);
      const pieces = at === null ? bytes(b) : [...at, b.length].map((c, i) => b.subarray(i === 0 ? 0 : at[i - 1], c));
      assert.deepEqual(decode(pieces), oracle(pieces));
    }),
    { numRuns: 3000 },
  );
});

test('an incomplete line kept over 16 MiB throws; a longer line within one chunk does not', () => {
  const d = new SseDecoder(() => {});
  d.feed(Buffer.from('data: '));
  d.feed(Buffer.alloc((16 << 20) - 6, 0x61));
  assert.throws(() => d.feed(Buffer.from('a')), { message: 'SSE line too long' });
  const out: string[] = [];
  new SseDecoder((data) => out.push(data)).feed(Buffer.from(`data: ${'x'.repeat(17 << 20)}\n\n`));
  assert.deepEqual(
    out.map((o) => o.length),
    [17 << 20],
  );
});

test('an instance holds no function of its own besides onData', () => {
  const d = new SseDecoder(() => {});
  d.feed(Buffer.from('data: a\n\ndata: b\r'));
  d.feed(Buffer.from('\ndata: \xe2', 'latin1'));
  assert.equal(Object.values(d).filter((v) => typeof v === 'function').length, 1);
});
