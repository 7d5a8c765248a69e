// A lean server-sent-events decoder: raw bytes from a socket in, split anywhere, each event's data
// out. Used by body.ts in place of eventsource-parser and a StringDecoder: a gateway holds one per
// open stream, so it is one object with its state in five fields and its methods on the prototype
// (no closures but the caller's onData), and a chunk of whole events costs one decoded string and
// the data strings sliced from it.
//
// The rules are those of eventsource-parser 3.1.1 fed through a streaming UTF-8 decoder, which are
// the WHATWG EventSource rules as far as the data goes: a leading BOM is stripped; lines end in LF,
// CR or CRLF (also split across chunks); `:` starts a comment; `data:value` (one leading space of
// the value dropped) or a bare `data` appends the value and a newline to the data; other fields
// are ignored; a blank line hands the data, without its last newline, to onData if there is any;
// data not followed by a blank line is never handed on. One deliberate match of eventsource-parser
// where the spec would differ: a CR that ends what has arrived so far (possibly followed by the
// first bytes of an incomplete character) might be the first half of a CRLF, and eventsource-parser
// keeps it, with its line, until a later chunk holds a line break; for a blank line that delays the
// dispatch, so it is delayed here too (invisible for other lines, which are processed at once).
//
// A chunk's complete lines are decoded with one toString, and its incomplete last line is kept as
// bytes (a line-break byte never occurs inside a UTF-8 sequence, so decoding up to the last line
// break is always exact) until a later chunk completes it; then the two are decoded together.
// Neither eventsource-parser's maxBufferSize nor anything here bounds the data of an event that
// never ends (data lines without a blank line); only the kept line is bounded.
// May import: node.

const LF = 10;
const CR = 13;
/** The longest incomplete line kept between feeds, in bytes. */
const MAX_LINE = 16 << 20; // a provider's event may carry a base64 image
/** The least room allocated for a kept line, so that a few more small pieces fit. */
const MIN_KEEP = 64;
/** A kept line is decoded together with the next chunk's lines up to this many bytes of them, else with its first line. */
const JOIN = 256;
/** Where a kept line and the bytes that complete it are put together to be decoded: shared, since it is only used within feed. */
const SCRATCH = 16384;
let scratch: Buffer | null = null;

// flags
/** The stream's first bytes were decoded (a BOM is only stripped there). */
const STARTED = 1;
/** The last chunk ended with a CR: an LF that starts the next chunk belongs to that line ending. */
const SKIP_LF = 2;
/** A blank line ending in a held CR (see the top): its dispatch waits for the next chunk with a line break. */
const DEFER = 4;

export class SseDecoder {
  /** The incomplete last line, as bytes: buf[0, len); null when there is none. */
  private buf: Buffer | null = null;
  private len = 0;
  /** The event's data so far (lines joined by LF), or null before its first data line. */
  private data: string | null = null;
  private flags = 0;

  constructor(private readonly onData: (data: string) => void) {}

  /**
   * Feeds raw bytes (any split: inside a UTF-8 sequence, between CR and LF, mid-line), calling
   * onData for each event completed by them. Throws Error('SSE line too long') if the incomplete
   * line kept until the next feed would exceed 16 MiB (a longer line that completes within one
   * chunk is fine); the kept bytes and the event's data are dropped then, and the stream is best
   * abandoned. An error thrown by onData propagates, and the rest of that chunk is lost.
   */
  feed(chunk: Buffer): void {
    const n = chunk.length;
    if (n === 0) return;
    const k = lastBreak(chunk);
    if (k < 0) {
      this.flags &= ~SKIP_LF;
      this.keep(chunk, 0, n);
      return;
    }
    const flags = this.flags;
    this.flags = (flags & ~(SKIP_LF | DEFER)) | STARTED;
    if (flags & DEFER) this.dispatch();
    const end = k + 1;
    // Whether the text a streaming decoder would have made of the bytes so far ends with this CR.
    const hold = chunk[k] === CR && (end === n || partial(chunk, end, n));
    let start = flags & SKIP_LF && chunk[0] === LF ? 1 : 0;
    const len = this.len;
    if (len > 0) {
      // The kept line and the chunk's lines, or only its first line if they are long, decoded together.
      let e = end;
      if (end > JOIN) {
        e = 0;
        while (chunk[e] !== LF && chunk[e] !== CR) e++;
        e += chunk[e] === CR && chunk[e + 1] === LF ? 2 : 1;
      }
      const m = len + e;
      const b = m <= SCRATCH ? (scratch ??= Buffer.allocUnsafeSlow(SCRATCH)) : Buffer.allocUnsafeSlow(m);
      copyBytes(this.buf!, 0, len, b, 0);
      copyBytes(chunk, 0, e, b, len);
      this.buf = null;
      this.len = 0;
      this.lines(b.toString('utf8', flags & STARTED ? 0 : bom(b, m), m), hold && e === end);
      start = e;
    } else if (!(flags & STARTED)) {
      start = bom(chunk, end);
    }
    if (start < end) this.lines(chunk.toString('utf8', start, end), hold);
    if (end < n) this.keep(chunk, end, n);
    else if (chunk[k] === CR) this.flags |= SKIP_LF;
  }

  /** Processes the lines of `s`, which ends with a line ending; `hold`: see DEFER. */
  private lines(s: string, hold: boolean): void {
    const n = s.length;
    let i = 0;
    let cr = s.indexOf('\r');
    if (cr === -1) {
      while (i < n) {
        const lf = s.indexOf('\n', i);
        const v = lf === i ? -1 : valueAt(s, i, lf);
        if (v >= 0 && this.data === null && s.charCodeAt(lf + 1) === LF) {
          // The common event, one data line and a blank line, handed on at once.
          i = lf + 2;
          this.onData(s.slice(v, lf));
          continue;
        }
        if (lf === i) this.dispatch();
        else if (v >= 0) this.push(s.slice(v, lf));
        i = lf + 1;
      }
      return;
    }
    let lf = s.indexOf('\n');
    while (i < n) {
      if (cr !== -1 && cr < i) cr = s.indexOf('\r', i);
      if (lf !== -1 && lf < i) lf = s.indexOf('\n', i);
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        if (hold && cr === i && cr === n - 1) {
          this.flags |= DEFER;
          return;
        }
        this.line(s, i, cr);
        i = lf === cr + 1 ? cr + 2 : cr + 1;
      } else {
        this.line(s, i, lf);
        i = lf + 1;
      }
    }
  }

  /** The line s[i, j): only blank and data lines matter. */
  private line(s: string, i: number, j: number): void {
    if (i === j) return this.dispatch();
    const v = valueAt(s, i, j);
    if (v >= 0) this.push(s.slice(v, j));
  }

  private push(value: string): void {
    const d = this.data;
    this.data = d === null ? value : d + '\n' + value;
  }

  private dispatch(): void {
    const d = this.data;
    if (d === null) return;
    this.data = null;
    this.onData(d);
  }

  /** Keeps chunk[from, to) as (the rest of) the incomplete line, within MAX_LINE. */
  private keep(chunk: Buffer, from: number, to: number): void {
    const len = this.len;
    const need = len + to - from;
    if (need > MAX_LINE) {
      this.buf = null;
      this.len = 0;
      this.data = null;
      throw new Error('SSE line too long');
    }
    let buf = this.buf;
    if (buf === null || buf.length < need) {
      // Unpooled, so a kept line never pins a shared 8 KiB pool slab; doubled for many small pieces.
      const grown = Buffer.allocUnsafeSlow(
        Math.max(need, buf === null ? MIN_KEEP : Math.min(buf.length * 2, MAX_LINE)),
      );
      if (buf !== null) copyBytes(buf, 0, len, grown, 0);
      this.buf = buf = grown;
    }
    copyBytes(chunk, from, to, buf, len);
    this.len = need;
  }
}

/** Copies from[start, end) to `to` at `at`: short runs in JS, which beats a call into C++. */
function copyBytes(from: Buffer, start: number, end: number, to: Buffer, at: number): void {
  if (end - start > 64) from.copy(to, at, start, end);
  else for (let i = start; i < end; i++) to[at++] = from[i]!;
}

/** The index of the last LF or CR in b, or -1: the tail in JS (usually the last byte), the rest natively. */
function lastBreak(b: Buffer): number {
  const n = b.length;
  const stop = n > 32 ? n - 32 : 0;
  for (let i = n - 1; i >= stop; i--) {
    const c = b[i];
    if (c === LF || c === CR) return i;
  }
  if (stop === 0) return -1;
  const lf = b.lastIndexOf(LF, stop - 1);
  return b.indexOf(CR, lf + 1) === -1 ? lf : b.lastIndexOf(CR, stop - 1);
}

/**
 * Where the value of the line s[i, j) starts if it is a data line (`data:value`, `data: value`, or
 * `data` alone, whose value is empty), else -1. s[j] is its line ending or past the end of s.
 */
function valueAt(s: string, i: number, j: number): number {
  if (
    s.charCodeAt(i) !== 100 ||
    s.charCodeAt(i + 1) !== 97 ||
    s.charCodeAt(i + 2) !== 116 ||
    s.charCodeAt(i + 3) !== 97
  )
    return -1;
  const c = i + 4;
  if (c === j) return j;
  if (s.charCodeAt(c) !== 58) return -1;
  return s.charCodeAt(c + 1) === 32 ? c + 2 : c + 1;
}

/** 3 if b[0, end) starts with a UTF-8 BOM, else 0. */
function bom(b: Buffer, end: number): number {
  return end >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
}

/** Whether b[i, n) (1 byte or more, no line break) is the start of a UTF-8 sequence that a streaming decoder keeps back. */
function partial(b: Buffer, i: number, n: number): boolean {
  const m = n - i;
  const c = b[i]!;
  const need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (m >= need) return false;
  if (m >= 2) {
    const d = b[i + 1]!;
    if (d < (c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80) || d > (c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf))
      return false;
  }
  return m < 3 || (b[i + 2]! & 0xc0) === 0x80;
}
