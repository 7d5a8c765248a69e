// The request log's rows in PostgreSQL's binary COPY format (docs/internals/performance.md): PGlite
// runs PostgreSQL in WebAssembly on one thread shared by every query of the gateway, and a binary
// field needs no input parsing there (a uuid is its 16 bytes, a timestamp its microseconds), where
// CSV's text is parsed field by field, the timestamp's the dearest. A value the binary form cannot
// carry exactly as the text form would (a malformed uuid, an integer out of range, a bad date)
// makes the batch's encoder return null, and the caller writes that batch as CSV, so what the store
// refuses, and why, is the same either way.

/** A column as the encoder needs it: the row's key and its SQL type as drizzle names it. */
export type BinaryColumn = { key: string; sqlType: string };

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01 UTC), as milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;
const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

type Kind = 'text' | 'uuid' | 'bool' | 'int4' | 'float8' | 'jsonb' | 'timestamptz';

function kindOf(sqlType: string): Kind {
  switch (sqlType) {
    case 'text':
      return 'text';
    case 'uuid':
      return 'uuid';
    case 'boolean':
      return 'bool';
    case 'integer':
      return 'int4';
    case 'double precision':
      return 'float8';
    case 'jsonb':
      return 'jsonb';
    case 'timestamp with time zone':
      return 'timestamptz';
  }
  throw new Error(`copy-binary: no binary form for the SQL type ${sqlType}`);
}

/** A growing byte buffer: one allocation for a batch, doubled when full. Bytes are written by
 * hand: a batch is some 30 short fields a row, and a native call per field costs more than the field. */
class Bytes {
  buf = Buffer.allocUnsafe(64 * 1024);
  at = 0;
  room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }
  int16(v: number): void {
    this.room(2);
    this.buf[this.at++] = (v >> 8) & 0xff;
    this.buf[this.at++] = v & 0xff;
  }
  /** Assumes room for 4. */
  int32At(v: number, at: number): void {
    const b = this.buf;
    b[at] = (v >>> 24) & 0xff;
    b[at + 1] = (v >>> 16) & 0xff;
    b[at + 2] = (v >>> 8) & 0xff;
    b[at + 3] = v & 0xff;
  }
  int32(v: number): void {
    this.room(4);
    this.int32At(v, this.at);
    this.at += 4;
  }
  /** A length-prefixed UTF-8 field, with `prefix` (jsonb's version byte) before the text. */
  text(s: string, prefix?: number): void {
    const head = prefix === undefined ? 4 : 5;
    this.room(head + s.length * 3);
    const b = this.buf;
    const start = this.at + 4;
    let at = start;
    if (prefix !== undefined) b[at++] = prefix;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      b[at++] = c;
    }
    if (i < s.length) at += b.write(s.slice(i), at, 'utf8');
    this.int32At(at - start, this.at);
    this.at = at;
  }
}

/** A hex digit's value, or -1. */
function hex(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/** A uuid's 16 bytes (the canonical 8-4-4-4-12 form, hyphens optional), or false when it is not one. */
function uuid(out: Bytes, s: string): boolean {
  if (s.length !== 36 && s.length !== 32) return false;
  const dashed = s.length === 36;
  out.room(20);
  const b = out.buf;
  let at = out.at + 4;
  let i = 0;
  for (let n = 0; n < 16; n++) {
    if (dashed && (i === 8 || i === 13 || i === 18 || i === 23)) {
      if (s.charCodeAt(i) !== 45) return false;
      i++;
    }
    const hi = hex(s.charCodeAt(i));
    const lo = hex(s.charCodeAt(i + 1));
    if (hi < 0 || lo < 0) return false;
    b[at++] = (hi << 4) | lo;
    i += 2;
  }
  out.int32At(16, out.at);
  out.at = at;
  return true;
}

/** Writes one field; false when the value has no exact binary form (the batch then goes as CSV). */
function field(out: Bytes, kind: Kind, v: unknown, text: (s: string) => string, json: (v: unknown) => string): boolean {
  if (v === null || v === undefined) {
    out.int32(-1);
    return true;
  }
  switch (kind) {
    case 'text':
      if (typeof v === 'object') return false;
      out.text(text(String(v)));
      return true;
    case 'uuid':
      return typeof v === 'string' && uuid(out, v);
    case 'bool':
      if (typeof v !== 'boolean') return false;
      out.int32(1);
      out.room(1);
      out.buf[out.at++] = v ? 1 : 0;
      return true;
    case 'int4':
      if (!Number.isInteger(v) || (v as number) < INT32_MIN || (v as number) > INT32_MAX) return false;
      out.int32(4);
      out.int32(v as number);
      return true;
    case 'float8':
      if (typeof v !== 'number') return false;
      out.int32(8);
      out.room(8);
      out.at = out.buf.writeDoubleBE(v, out.at);
      return true;
    case 'jsonb':
      out.text(json(v), 1);
      return true;
    case 'timestamptz': {
      const ms = v instanceof Date ? v.getTime() : Number.NaN;
      if (!Number.isFinite(ms)) return false;
      // Microseconds since 2000 fit a double exactly (under 2^53 for some 285 years either way).
      const us = (ms - PG_EPOCH_MS) * 1000;
      const high = Math.floor(us / 0x1_0000_0000);
      out.int32(8);
      out.int32(high);
      out.int32(us - high * 0x1_0000_0000);
      return true;
    }
  }
}

/** An encoder for rows of `columns`, in order; `text` and `json` make a value storable (request-log.ts). */
export function binaryCopyEncoder(
  columns: BinaryColumn[],
  o: { text: (s: string) => string; json: (v: unknown) => string },
) {
  const kinds = columns.map((c) => kindOf(c.sqlType));
  const keys = columns.map((c) => c.key);
  /** The batch as one COPY … (format binary) input, or null when a value needs the text form. */
  return (rows: readonly object[]): Uint8Array<ArrayBuffer> | null => {
    const out = new Bytes();
    out.room(SIGNATURE.length + 8);
    out.at += SIGNATURE.copy(out.buf, out.at);
    out.int32(0);
    out.int32(0);
    for (const row of rows) {
      out.int16(kinds.length);
      for (let i = 0; i < kinds.length; i++)
        if (!field(out, kinds[i]!, (row as Record<string, unknown>)[keys[i]!], o.text, o.json)) return null;
    }
    out.int16(-1);
    return new Uint8Array(out.buf.buffer as ArrayBuffer, out.buf.byteOffset, out.at);
  };
}
