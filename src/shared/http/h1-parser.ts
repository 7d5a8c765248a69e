// An incremental HTTP/1.1 response parser (RFC 9112): the status line and headers, then a body
// delimited by Content-Length, chunked transfer coding, or the connection's close. Pure: bytes in,
// callbacks out, no I/O. It exists so the gateway's daemon link can hold an open stream with a
// bare socket and a few numbers, where a general-purpose client keeps kilobytes per connection.
// May import: node:buffer only.

export type ResponseHead = { status: number; headers: Record<string, string>; keepAlive: boolean };

export type ParserEvents = {
  head(h: ResponseHead): void;
  data(chunk: Buffer): void;
  end(): void;
};

export class ParseError extends Error {}

const MAX_HEAD = 64 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkCrlf,
  Trailers,
  UntilClose,
  Done,
}

function parseHead(text: string): ResponseHead {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
  if (!m) throw new ParseError('malformed status line');
  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new ParseError('malformed header line');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  const connection = (headers.connection ?? '').toLowerCase();
  const keepAlive = m[1] === '1' ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
  return { status: Number(m[2]), headers, keepAlive };
}

/** The index after a line ending (CRLF or a bare LF) at i, or -1. */
const eol = (buf: Buffer, i: number) => (buf[i] === 13 && buf[i + 1] === 10 ? i + 2 : buf[i] === 10 ? i + 1 : -1);

export class ResponseParser {
  private state = State.Head;
  private pending: Buffer | null = null;
  private remaining = 0;
  private line = '';
  private reusable = false;

  constructor(private readonly on: ParserEvents) {}

  /** True once the response ended on its own framing and the connection may carry another request. */
  get reusableAfterEnd(): boolean {
    return this.state === State.Done && this.reusable;
  }

  get done(): boolean {
    return this.state === State.Done;
  }

  /** Feeds bytes from the connection; throws ParseError on a malformed response. */
  feed(buf: Buffer): void {
    let at = 0;
    while (at < buf.length && this.state !== State.Done) {
      switch (this.state) {
        case State.Head:
          at = this.head(buf, at);
          break;
        case State.Length:
        case State.ChunkData: {
          const n = Math.min(this.remaining, buf.length - at);
          this.remaining -= n;
          const piece = buf.subarray(at, at + n);
          at += n;
          if (n) this.on.data(piece); // before end(), which the last piece of a Content-Length body may bring
          if (this.remaining === 0) this.state = this.state === State.Length ? this.finish() : State.ChunkCrlf;
          break;
        }
        case State.UntilClose:
          this.on.data(at ? buf.subarray(at) : buf);
          at = buf.length;
          break;
        default:
          at = this.lines(buf, at);
      }
    }
    // Bytes nobody asked for: the response itself is whole, but the connection cannot carry another.
    if (at < buf.length && this.state === State.Done) this.reusable = false;
  }

  /** The connection closed: ends a close-delimited body, else the response was cut short. */
  eof(): void {
    if (this.state === State.UntilClose) {
      this.reusable = false;
      this.finish();
      return;
    }
    if (this.state !== State.Done) throw new ParseError('the connection closed before the response ended');
  }

  private finish(): State.Done {
    this.state = State.Done;
    this.on.end();
    return State.Done;
  }

  private head(buf: Buffer, at: number): number {
    const joined = this.pending ? Buffer.concat([this.pending, buf.subarray(at)]) : buf.subarray(at);
    const end = joined.indexOf(CRLF2);
    if (end > MAX_HEAD) throw new ParseError('response head too large'); // however the bytes were split
    if (end === -1) {
      if (joined.length > MAX_HEAD) throw new ParseError('response head too large');
      this.pending = Buffer.from(joined);
      return buf.length;
    }
    const consumed = end + 4 - (this.pending?.length ?? 0);
    this.pending = null;
    const head = parseHead(joined.toString('latin1', 0, end));
    if (head.status < 200) return at + consumed; // an interim response: the real one follows
    this.reusable = head.keepAlive;
    const te = (head.headers['transfer-encoding'] ?? '').toLowerCase();
    const length = head.headers['content-length'];
    // 204 and 304 have no body whatever their framing headers say (a 304's Content-Length is the representation's).
    if (head.status === 204 || head.status === 304) this.state = State.Done;
    else if (/\bchunked\s*$/.test(te)) this.state = State.ChunkSize;
    else if (length !== undefined) {
      if (!/^\d+$/.test(length)) throw new ParseError('invalid content-length');
      this.remaining = Number(length);
      this.state = State.Length;
    } else {
      this.reusable = false;
      this.state = State.UntilClose;
    }
    this.on.head(head);
    if (this.state === State.Length && this.remaining === 0) this.finish();
    else if (this.state === State.Done) this.on.end();
    return at + consumed;
  }

  /** Chunk-size lines, the CRLF after chunk data, and trailers, one line at a time. */
  private lines(buf: Buffer, at: number): number {
    if (this.line === '') {
      const fast = this.framing(buf, at);
      if (fast !== -1) return fast;
    }
    const nl = buf.indexOf(10, at);
    const upto = nl === -1 ? buf.length : nl + 1;
    this.line += buf.toString('latin1', at, upto);
    if (this.line.length > 4096) throw new ParseError('chunk framing line too long');
    if (nl === -1) return upto;
    const line = this.line.replace(/\r?\n$/, '');
    this.line = '';
    if (this.state === State.ChunkCrlf) {
      if (line !== '') throw new ParseError('missing CRLF after chunk data');
      this.state = State.ChunkSize;
    } else if (this.state === State.ChunkSize) {
      const m = /^([0-9a-fA-F]{1,12})(?:\s*;.*)?$/.exec(line);
      if (!m) throw new ParseError('invalid chunk size');
      this.remaining = parseInt(m[1]!, 16);
      this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
    } else if (line === '') this.finish(); // trailers end with an empty line
    return upto;
  }

  /** The common framing lines (a CRLF after chunk data, a bare hex size) read from the bytes when whole in this read; -1 leaves it to lines(). */
  private framing(buf: Buffer, at: number): number {
    if (this.state === State.ChunkCrlf) {
      const next = eol(buf, at);
      if (next !== -1) this.state = State.ChunkSize;
      return next;
    }
    if (this.state !== State.ChunkSize) return -1;
    let size = 0;
    let i = at;
    for (; i < buf.length && i - at < 12; i++) {
      const c = buf[i]!;
      const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (d === -1) break;
      size = size * 16 + d;
    }
    const next = i > at ? eol(buf, i) : -1;
    if (next === -1) return -1;
    this.remaining = size;
    this.state = size === 0 ? State.Trailers : State.ChunkData;
    return next;
  }
}
