// A tar stream's entries read from their headers alone, a chunk at a time, for a folder upload's
// check (files-upload.ts's tarCheck) in front of GNU tar: each entry's path (ustar's prefix, GNU's
// long names and pax's path applied), its type and its size; its data skipped by count, never
// copied. node-tar's Parser made a stream object for each entry and passed every byte of its data
// through it, most of the gateway's CPU for an upload (docs/performance-log.md). It reads as GNU
// tar does where that decides what tar unpacks (which headers there are, where they are, the name
// each gives), and refuses what it would have to guess at: a bad checksum (GNU tar would skip ahead
// to the next block that looks like a header), a size that is not octal digits, a sparse file, a
// global header that renames or resizes entries, two long names for one entry. The stream's end is
// its first zero block, as for GNU tar, which reads nothing after it, or its last byte between two
// entries (docs/guides/files.md).
// May import: node built-ins.

export type TarEntry = { path: string; type: string; size: number };

const BLOCK = 512;
/** The most a long name or a pax header may hold: a name is at most 1 KiB here (MAX_PATH_BYTES). */
const MAX_EXTENSION_BYTES = 64 * 1024;

/** Entry types by typeflag, named as node-tar names them (the check's words for them). */
const TYPES: Record<string, string> = {
  '0': 'File',
  '\0': 'OldFile',
  '1': 'Link',
  '2': 'SymbolicLink',
  '3': 'CharacterDevice',
  '4': 'BlockDevice',
  '5': 'Directory',
  '6': 'FIFO',
  '7': 'ContiguousFile',
  A: 'SolarisACL',
  D: 'GNUDumpDir',
  I: 'Inode',
  M: 'ContinuationFile',
  N: 'OldGnuLongPath',
  S: 'SparseFile',
  V: 'TapeVolumeHeader',
  X: 'OldExtendedHeader',
};

/** Headers that describe the entry after them rather than being one. */
type Extension = 'L' | 'K' | 'x' | 'g';
const isExtension = (flag: string): flag is Extension => flag === 'L' || flag === 'K' || flag === 'x' || flag === 'g';

export class TarStreamError extends Error {
  override name = 'TarStreamError';
}

/** What the extension headers before an entry said of it. */
type Pending = { path?: string; linkpath?: string; size?: number; longName?: boolean; pax?: boolean };

/** Reads headers as chunks come (`write`), telling `onEntry` of each entry once its header (and
 * those before it) are whole; throws TarStreamError for a stream it will not read. */
export class TarHeaders {
  /** A header (or the start of one) split across chunks. */
  private readonly head = Buffer.alloc(BLOCK);
  private headBytes = 0;
  /** Bytes of the current entry's data (and its padding) still to skip. */
  private skip = 0;
  /** An extension header's data being gathered, and how much of it is still to come. */
  private ext: { flag: Extension; data: Buffer; at: number } | null = null;
  private extPadding = 0;
  private pending: Pending = {};
  private ended = false;

  constructor(private readonly onEntry: (e: TarEntry) => void) {}

  /** True once the stream's end (a zero block) has been read. */
  get done(): boolean {
    return this.ended;
  }

  write(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.ended) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      if (this.ext) {
        const n = Math.min(this.ext.data.length - this.ext.at, chunk.length - at);
        chunk.copy(this.ext.data, this.ext.at, at, at + n);
        this.ext.at += n;
        at += n;
        if (this.ext.at === this.ext.data.length) {
          const { flag, data } = this.ext;
          this.ext = null;
          this.skip = this.extPadding;
          this.extension(flag, data);
        }
        continue;
      }
      // A whole header in place is read where it lies; one split across chunks is gathered first.
      if (this.headBytes === 0 && chunk.length - at >= BLOCK) {
        this.header(chunk.subarray(at, at + BLOCK));
        at += BLOCK;
        continue;
      }
      const n = Math.min(BLOCK - this.headBytes, chunk.length - at);
      chunk.copy(this.head, this.headBytes, at, at + n);
      this.headBytes += n;
      at += n;
      if (this.headBytes === BLOCK) {
        this.headBytes = 0;
        this.header(this.head);
      }
    }
  }

  /** The stream ended: throws if it ended inside a header or an entry's data (GNU tar's "unexpected
   * EOF"); between entries, as GNU tar does, it reads as the end. */
  end(): void {
    if (!this.ended && (this.headBytes > 0 || this.skip > 0 || this.ext))
      throw new TarStreamError('the stream ends inside an entry (cut short)');
  }

  private header(h: Buffer): void {
    if (isZero(h)) {
      this.ended = true;
      return;
    }
    if (!checksumMatches(h)) throw new TarStreamError('a header whose checksum does not match');
    const flag = String.fromCharCode(h[156]!);
    let size = octal(h, 124, 12, 'size');
    if (isExtension(flag)) {
      if (size > MAX_EXTENSION_BYTES)
        throw new TarStreamError(`an extended header of more than ${MAX_EXTENSION_BYTES} bytes`);
      this.extPadding = padding(size);
      if (size === 0) this.extension(flag, Buffer.alloc(0));
      else this.ext = { flag, data: Buffer.allocUnsafe(size), at: 0 };
      return;
    }
    const p = this.pending;
    this.pending = {};
    if (p.size !== undefined) size = p.size;
    const type = TYPES[flag] ?? flag;
    this.onEntry({ path: p.path ?? nameOf(h), type, size });
    this.skip = size + padding(size);
  }

  private extension(flag: Extension, data: Buffer): void {
    if (flag === 'L' || flag === 'K') {
      const key = flag === 'L' ? 'path' : 'linkpath';
      if (this.pending[key] !== undefined) throw new TarStreamError('two long names for one entry');
      const nul = data.indexOf(0);
      this.pending[key] = data.toString('utf8', 0, nul === -1 ? data.length : nul);
      return;
    }
    const records = paxRecords(data);
    if (flag === 'g') {
      for (const key of records.keys())
        if (key === 'path' || key === 'linkpath' || key === 'size' || key.startsWith('GNU.sparse.'))
          throw new TarStreamError(`a global header that sets ${key} for every entry`);
      return;
    }
    for (const [key, value] of records) {
      if (key.startsWith('GNU.sparse.')) throw new TarStreamError('a sparse file');
      if (key === 'path' || key === 'linkpath') {
        if (this.pending[key] !== undefined) throw new TarStreamError('two long names for one entry');
        this.pending[key] = value;
      } else if (key === 'size') {
        if (!/^\d{1,15}$/.test(value))
          throw new TarStreamError(`a pax size that is not a number ("${value.slice(0, 20)}")`);
        this.pending.size = Number(value);
      }
    }
  }
}

const padding = (size: number) => (BLOCK - (size % BLOCK)) % BLOCK;

function isZero(h: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (h[i] !== 0) return false;
  return true;
}

/** A numeric field as GNU tar writes it: octal digits, after spaces, before a NUL or space (a
 * field of base-256 or of anything else is refused, not guessed at). */
function octal(h: Buffer, at: number, len: number, what: string): number {
  let i = at;
  const end = at + len;
  while (i < end && h[i] === 0x20) i++;
  let value = 0;
  let digits = 0;
  for (; i < end && h[i]! >= 0x30 && h[i]! <= 0x37; i++, digits++) value = value * 8 + (h[i]! - 0x30);
  for (; i < end; i++) if (h[i] !== 0 && h[i] !== 0x20) digits = 0;
  if (digits === 0) throw new TarStreamError(`a header whose ${what} is not an octal number`);
  return value;
}

/** The header's checksum: its bytes summed with the checksum's own field (bytes 148 to 155, words
 * 37 and 38) as spaces, unsigned or signed (GNU tar accepts either); four bytes at a time. */
function checksumMatches(h: Buffer): boolean {
  const want = octal(h, 148, 8, 'checksum');
  let unsigned = 8 * 0x20;
  let high = 0;
  for (let i = 0; i < BLOCK; i += 4) {
    if (i === 148) i = 156;
    const w = h.readUInt32LE(i);
    const pairs = (w & 0x00ff00ff) + ((w >>> 8) & 0x00ff00ff);
    unsigned += (pairs & 0xffff) + (pairs >>> 16);
    if (w & 0x80808080) high += ((w >>> 7) & 1) + ((w >>> 15) & 1) + ((w >>> 23) & 1) + (w >>> 31);
  }
  // A signed byte of 128 or more counts 256 less.
  return want === unsigned || want === unsigned - 256 * high;
}

/** A NUL-terminated field. */
function field(h: Buffer, at: number, len: number): string {
  const nul = h.indexOf(0, at);
  return h.toString('utf8', at, nul === -1 || nul > at + len ? at + len : nul);
}

const USTAR = Buffer.from('ustar\0', 'latin1');

/** The entry's name as its header gives it: POSIX ustar's prefix, if any, before its name. */
function nameOf(h: Buffer): string {
  const name = field(h, 0, 100);
  if (h.compare(USTAR, 0, 6, 257, 263) !== 0 || h[345] === 0) return name;
  return `${field(h, 345, 155)}/${name}`;
}

/** A pax header's records: "<length> <key>=<value>\n", the length counting the whole record. */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const digits = space === -1 ? '' : data.toString('latin1', at, space);
    const len = Number(digits);
    if (!/^\d{1,10}$/.test(digits) || len <= digits.length + 1 || at + len > data.length)
      throw new TarStreamError('a pax header whose records are malformed');
    const record = data.toString('utf8', space + 1, at + len);
    const eq = record.indexOf('=');
    if (eq <= 0 || !record.endsWith('\n')) throw new TarStreamError('a pax header whose records are malformed');
    out.set(record.slice(0, eq), record.slice(eq + 1, -1));
    at += len;
  }
  return out;
}
