// TarHeaders against GNU tar's own reading of the same archives (tar --list), and node-tar's:
// folders of random names (long ones, which need ustar's prefix, GNU's long names or pax's path),
// packed by GNU tar in each of its formats and by node-tar, read in chunks cut anywhere
// (property, fast-check); then, by table, the streams it refuses rather than guess at.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { create, Header, Parser } from 'tar';
import { type TarEntry, TarHeaders } from './tar-headers.ts';

/** The entries read from `stream` cut at `cuts`. */
function read(stream: Buffer, cuts: number[] = []): TarEntry[] {
  const out: TarEntry[] = [];
  const h = new TarHeaders((e) => out.push(e));
  const bounds = [0, ...[...new Set(cuts)].filter((c) => c > 0 && c < stream.length).sort((a, b) => a - b)];
  for (let i = 0; i < bounds.length; i++) h.write(stream.subarray(bounds[i], bounds[i + 1] ?? stream.length));
  h.end();
  return out;
}

/** node-tar's reading: each entry's path, type and size. */
async function nodeTar(stream: Buffer): Promise<TarEntry[]> {
  const out: TarEntry[] = [];
  const p = new Parser({
    strict: true,
    onReadEntry: (e) => (out.push({ path: e.path, type: e.type, size: e.size }), e.resume()),
  });
  await new Promise<void>((resolve, reject) => p.once('end', resolve).once('error', reject).end(stream));
  return out;
}

// Long names often: past 100 bytes a path needs ustar's prefix, a GNU long name or a pax path.
const segment = fc.oneof(
  fc.stringMatching(/^[a-zA-Z0-9 ._é漢-]{1,60}$/).filter((s) => s !== '.' && s !== '..'),
  fc
    .tuple(fc.integer({ min: 1, max: 120 }), fc.constantFrom('l', 'é', '漢'))
    .map(([n, c]) => c.repeat(Math.min(n, Math.floor(250 / Buffer.byteLength(c))))),
);
const tree = fc.uniqueArray(fc.array(segment, { minLength: 1, maxLength: 5 }), {
  minLength: 1,
  maxLength: 8,
  selector: (p) => p.join('/'),
});

test('entries read as GNU tar and node-tar read them, from every format, however the stream is cut', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'cohort-tar-headers-'));
  try {
    let n = 0;
    // The cases that had a long path, by format: each format's way of holding one was read.
    const long = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        tree,
        fc.constantFrom('gnu', 'oldgnu', 'posix', 'ustar', 'node-tar'),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (paths, format, cuts) => {
          const dir = join(scratch, `t${n++}`);
          for (const p of paths) {
            // A name that is a file on one path and a folder on another is whichever came first.
            try {
              mkdirSync(join(dir, ...p.slice(0, -1)), { recursive: true });
              writeFileSync(join(dir, ...p), `${p.join('/')}\n`.repeat(p.length * 37));
            } catch {}
          }
          const archive = join(scratch, `t${n}.tar`);
          if (format === 'node-tar') await create({ file: archive, cwd: dir, portable: true }, ['.']);
          else {
            // ustar cannot hold every long name; GNU tar then refuses, and the case proves nothing.
            try {
              execFileSync('tar', ['-c', '-f', archive, `--format=${format}`, '-C', dir, '.'], { stdio: 'pipe' });
            } catch {
              return;
            }
          }
          const stream = readFileSync(archive);
          const ours = read(
            stream,
            cuts.map((c) => c % stream.length),
          );
          const listed = execFileSync('tar', ['-t', '-f', archive, '--quoting-style=literal'], {
            env: { ...process.env, LC_ALL: 'C.UTF-8' },
          })
            .toString()
            .split('\n')
            .slice(0, -1);
          assert.deepEqual(
            ours.map((e) => e.path),
            listed,
          );
          assert.deepEqual(ours, await nodeTar(stream));
          if (ours.some((e) => Buffer.byteLength(e.path) > 100)) long.set(format, (long.get(format) ?? 0) + 1);
        },
      ),
      {
        numRuns: 80,
        // A long path in every format, whatever the run draws (ustar refuses most of those drawn).
        examples: (['gnu', 'oldgnu', 'posix', 'ustar', 'node-tar'] as const).map((f) => [
          [['a'.repeat(60), 'b'.repeat(60)]],
          f,
          [511, 1024],
        ]),
      },
    );
    for (const format of ['gnu', 'oldgnu', 'posix', 'ustar', 'node-tar'])
      assert.ok((long.get(format) ?? 0) > 0, `no archive of ${format} held a long path (${[...long]})`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

/** One header block of `fields`, its checksum made (or `checksum` written as is). */
function block(o: {
  path: string;
  type?: string;
  size?: number;
  checksum?: string;
  raw?: (b: Buffer) => void;
  /** The checksum as the sum of signed bytes (as some old writers made it). */
  signed?: boolean;
}): Buffer {
  const h = new Header({
    path: o.path,
    type: (o.type ?? 'File') as 'File',
    size: o.size ?? 0,
    mode: 0o644,
    mtime: new Date(0),
  });
  h.encode();
  const b = h.block!;
  if (o.raw || o.signed) {
    o.raw?.(b);
    let sum = 8 * 0x20;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0 : o.signed && b[i]! >= 128 ? b[i]! - 256 : b[i]!;
    b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  }
  if (o.checksum !== undefined) b.write(o.checksum, 148, 8, 'latin1');
  return b;
}
const data = (s: string) => {
  const b = Buffer.from(s);
  return Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
};
const END = Buffer.alloc(1024);
/** An extension header (GNU long name, pax) carrying `body`. */
const extension = (type: string, body: string) =>
  Buffer.concat([block({ path: '././@LongLink', type, size: Buffer.byteLength(body) }), data(body)]);
/** Pax records, each "<length> <key>=<value>\n" with the length counting the whole record. */
function records(...pairs: [string, string][]): string {
  return pairs
    .map(([k, v]) => {
      const rest = ` ${k}=${v}\n`;
      let len = Buffer.byteLength(rest) + 1;
      while (String(len).length + Buffer.byteLength(rest) !== len) len++;
      return `${len}${rest}`;
    })
    .join('');
}

test('names, sizes and the end, by table', () => {
  const cases: [string, Buffer, TarEntry[]][] = [
    [
      "a GNU long name, and a pax path and size, replace the header's",
      Buffer.concat([
        extension('NextFileHasLongPath', `${'l'.repeat(150)}\0`),
        block({ path: 'short' }),
        extension('ExtendedHeader', records(['path', 'paxed/name'], ['size', '3'])),
        block({ path: 'ignored', size: 0 }),
        data('abc'),
        END,
      ]),
      [
        { path: 'l'.repeat(150), type: 'File', size: 0 },
        { path: 'paxed/name', type: 'File', size: 3 },
      ],
    ],
    [
      "ustar's prefix comes before the name; a GNU header's prefix area is not a prefix",
      Buffer.concat([
        block({ path: 'n', raw: (b) => b.write('pre/fix\0', 345, 'latin1') }),
        block({ path: 'g', raw: (b) => (b.write('ustar  \0', 257, 'latin1'), b.write('junk', 345, 'latin1')) }),
        END,
      ]),
      [
        { path: 'pre/fix/n', type: 'File', size: 0 },
        { path: 'g', type: 'File', size: 0 },
      ],
    ],
    [
      'a checksum of signed bytes is one too',
      Buffer.concat([block({ path: 'été', signed: true }), END]),
      [{ path: 'été', type: 'File', size: 0 }],
    ],
    [
      'nothing after the first zero block is read (GNU tar reads nothing after it either)',
      Buffer.concat([block({ path: 'a' }), Buffer.alloc(512), block({ path: '../evil' }), END]),
      [{ path: 'a', type: 'File', size: 0 }],
    ],
    [
      "a global header that only comments (git archive's) is read past",
      Buffer.concat([
        extension('GlobalExtendedHeader', records(['comment', '0123456789012345678901234567890123456789'])),
        block({ path: 'x' }),
        END,
      ]),
      [{ path: 'x', type: 'File', size: 0 }],
    ],
    [
      'an empty stream, and one that ends between entries, end well',
      Buffer.concat([block({ path: 'x' })]),
      [{ path: 'x', type: 'File', size: 0 }],
    ],
  ];
  for (const [what, stream, want] of cases) {
    for (const cuts of [[], [1], [511, 513], [100, 700, 1500]]) assert.deepEqual(read(stream, cuts), want, what);
  }
  assert.deepEqual(read(Buffer.alloc(0)), []);
});

test('streams it will not guess at are refused, saying why', () => {
  const refused: [Buffer, string][] = [
    [Buffer.concat([block({ path: 'a', checksum: '0000000\0' }), END]), 'a header whose checksum does not match'],
    [
      Buffer.concat([block({ path: 'a', raw: () => {} }).fill(0x62, 1, 2), END]),
      'a header whose checksum does not match',
    ],
    [
      Buffer.concat([block({ path: 'a', raw: (b) => b.write('0000000001x\0', 124, 'latin1') }), END]),
      'a header whose size is not an octal number',
    ],
    [
      Buffer.concat([block({ path: 'a', raw: (b) => ((b[124] = 0x80), b.fill(0, 125, 135), (b[135] = 1)) }), END]),
      'a header whose size is not an octal number',
    ],
    [
      Buffer.concat([extension('ExtendedHeader', records(['GNU.sparse.major', '1'])), block({ path: 'a' }), END]),
      'a sparse file',
    ],
    [
      Buffer.concat([extension('GlobalExtendedHeader', records(['path', 'evil'])), block({ path: 'a' }), END]),
      'a global header that sets path for every entry',
    ],
    [
      Buffer.concat([
        extension('NextFileHasLongPath', 'one\0'),
        extension('ExtendedHeader', records(['path', 'two'])),
        block({ path: 'a' }),
        END,
      ]),
      'two long names for one entry',
    ],
    [
      Buffer.concat([extension('ExtendedHeader', '99 path=x\n'), block({ path: 'a' }), END]),
      'a pax header whose records are malformed',
    ],
    [
      Buffer.concat([extension('ExtendedHeader', '0x10 path=abcd\n'), block({ path: 'a' }), END]),
      'a pax header whose records are malformed',
    ],
    [
      Buffer.concat([extension('ExtendedHeader', records(['size', '-5'])), block({ path: 'a' }), END]),
      'a pax size that is not a number ("-5")',
    ],
    [
      Buffer.concat([block({ path: '././@LongLink', type: 'NextFileHasLongPath', size: 65537 }), END]),
      'an extended header of more than 65536 bytes',
    ],
    [
      Buffer.concat([block({ path: 'a', size: 600 }), data('x'.repeat(100))]),
      'the stream ends inside an entry (cut short)',
    ],
    [block({ path: 'a' }).subarray(0, 300), 'the stream ends inside an entry (cut short)'],
  ];
  for (const [stream, why] of refused)
    for (const cuts of [[], [7], [512, 1030]])
      assert.throws(() => read(stream, cuts), { name: 'TarStreamError', message: why });
});
