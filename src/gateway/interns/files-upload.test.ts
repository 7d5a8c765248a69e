// A folder upload's check (tarCheck) in front of GNU tar (boundedBody's inspect): whatever the
// chunks a stream arrives in, no byte of a chunk that completes a refused entry's header is passed
// on, so tar never reads that entry (property, fast-check); and the stream is refused naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Header } from 'tar';
import { boundedBody } from './files-context.ts';
import { tarCheck } from './files-upload.ts';

/** One entry's header (one block: a long path is split into ustar's prefix) and body, padded to
 * blocks. */
function entry(path: string, type: string, o: { body?: string; linkpath?: string } = {}): Buffer {
  const data = Buffer.from(o.body ?? '');
  const h = new Header({
    path,
    type: type as 'File',
    size: data.length,
    mode: 0o644,
    mtime: new Date(0),
    linkpath: o.linkpath,
  });
  h.encode();
  return Buffer.concat([h.block!, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

/** What passes the check, given the stream cut at `cuts`: the bytes passed on and the refusal. */
async function passed(stream: Buffer, cuts: number[]): Promise<{ out: Buffer; refusal: string | null }> {
  const check = tarCheck(100);
  const body = boundedBody({ maxBytes: 1 << 30, inspect: check.write });
  const out: Buffer[] = [];
  body.stream.on('data', (c: Buffer) => out.push(c)).on('error', () => {});
  const bounds = [
    0,
    ...[...new Set(cuts)].sort((a, b) => a - b).filter((c) => c > 0 && c < stream.length),
    stream.length,
  ];
  for (let i = 1; i < bounds.length && !body.refusal(); i++) {
    await new Promise<void>((resolve) => body.stream.write(stream.subarray(bounds[i - 1], bounds[i]), () => resolve()));
  }
  const refusal = body.refusal() ?? (await check.end());
  return { out: Buffer.concat(out), refusal: refusal?.message ?? null };
}

const GOOD = Buffer.concat([entry('src/', 'Directory'), entry('src/a.txt', 'File', { body: 'a'.repeat(3000) })]);
const BAD: [Buffer, string][] = [
  [entry('../evil', 'File', { body: 'x' }), 'tar entry "../evil" is a path that climbs out of the work folder with ..'],
  [entry('ln', 'SymbolicLink', { linkpath: '/etc/shadow' }), 'tar entry "ln" is a symbolic link'],
  [entry('src/a.txt', 'Link', { linkpath: '/etc/shadow' }), 'tar entry "src/a.txt" is a hard link'],
  [entry('dev', 'CharacterDevice'), 'tar entry "dev" is a device'],
  [
    entry('nope/x', 'File', { body: 'x' }),
    'tar entry "nope/x" is a path whose folder "nope" is not an entry before it',
  ],
  [
    entry(`long/${'n'.repeat(120)}/../../x`, 'File'),
    `tar entry "long/${'n'.repeat(120)}/../../x" is a path that climbs out of the work folder with ..`,
  ],
];

test('a refused entry: nothing from the chunk that completes its header on is passed on to tar, however the stream is cut', async () => {
  for (const [bad, why] of BAD) {
    const stream = Buffer.concat([GOOD, bad, Buffer.alloc(1024)]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }), async (cuts) => {
        const { out, refusal } = await passed(stream, cuts);
        assert.equal(refusal, `invalid request parameters: body: ${why}`);
        const headerEnd = GOOD.length + 512;
        assert.ok(out.length < headerEnd, `${out.length} bytes passed, the refused header ends at ${headerEnd}`);
        assert.ok(out.equals(stream.subarray(0, out.length)), 'what passes is the stream as it came');
      }),
      { numRuns: 60 },
    );
  }
});

test('a good stream passes whole, and a compressed one not at all', async () => {
  const stream = Buffer.concat([GOOD, Buffer.alloc(1024)]);
  const whole = await passed(stream, [1, 600, 3000]);
  assert.deepEqual([whole.out.equals(stream), whole.refusal], [true, null]);
  const gz = await passed(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0]), []);
  assert.deepEqual(
    [gz.out.length, gz.refusal],
    [0, 'invalid request parameters: body: a compressed tar stream; send it uncompressed (tar -c, not tar -cz)'],
  );
});
