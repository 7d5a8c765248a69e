// OTLP/HTTP protobuf for broadcast (docs/guides/observability.md): an ExportTraceServiceRequest of
// the spans spans.ts describes, written straight from them. The official serializer
// (@opentelemetry/otlp-transformer) needs each span as the SDK's record and costs about 7 µs a span;
// this writer knows the few fields a broadcast span has (one resource, one scope, no events or
// links) and writes them in the official serializer's order, so the bytes are the same: the official
// one is the oracle in otlp-protobuf.test.ts. Each span is encoded once, as it is recorded, and a
// batch is its spans' bytes under one header: nothing of a request outlives it but those bytes.
import type { SpanShape } from './spans.ts';

/** A growable byte buffer with the few protobuf writes the spans need. */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;

  constructor(size = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A tag of a field under 16 (one byte). */
  tag(field: number, wire: number): void {
    this.ensure(1);
    this.buf[this.pos++] = (field << 3) | wire;
  }

  varint(v: number): void {
    this.ensure(10);
    if (v < 0) return this.negative(v);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  /** A negative int64 as protobuf writes it: its two's complement, ten bytes. */
  private negative(v: number): void {
    let u = BigInt.asUintN(64, BigInt(v));
    for (let i = 0; i < 9; i++) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  /** Reserves one byte for the length of the message that follows; `end` writes it. */
  start(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of the message begun at `at`, moving it on when the length takes more than a byte. */
  end(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    const size = varintSize(length);
    this.ensure(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    let p = at;
    let v = length;
    while (v > 0x7f) {
      this.buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[p] = v;
  }

  string(s: string): void {
    const n = s.length;
    this.ensure(n * 3 + 5);
    // Most strings here are short ASCII (attribute keys, ids, model names): copied byte by byte.
    if (n < 0x80) {
      const at = this.pos++;
      let p = this.pos;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          this.pos = at;
          return this.utf8(s);
        }
        this.buf[p++] = c;
      }
      this.buf[at] = n;
      this.pos = p;
      return;
    }
    this.utf8(s);
  }

  private utf8(s: string): void {
    this.varint(Buffer.byteLength(s));
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A bytes field from its hex spelling (trace and span ids: lowercase, 16 or 32 digits). */
  hex(h: string): void {
    const n = h.length >>> 1;
    this.ensure(n + 1);
    this.buf[this.pos++] = n;
    for (let i = 0; i < n; i++)
      this.buf[this.pos++] = (nibble(h.charCodeAt(2 * i)) << 4) | nibble(h.charCodeAt(2 * i + 1));
  }

  fixed32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Milliseconds since the epoch as fixed64 nanoseconds, through the seconds and nanoseconds the SDK's HrTime holds. */
  timeMs(ms: number): void {
    const seconds = Math.floor(ms / 1000);
    const nanos = Math.round((ms % 1000) * 1e6);
    // seconds × 1e9 + nanos overflows a double's exact integers: split as the official writer does.
    const lo16 = (seconds & 0xffff) * 1e9;
    const hi = ((seconds / 0x10000) >>> 0) * 1e9;
    const low = (lo16 >>> 0) + (((hi & 0xffff) * 0x10000) >>> 0) + nanos;
    const high = Math.floor(lo16 / 0x100000000) + ((hi / 0x10000) >>> 0) + Math.floor(low / 0x100000000);
    this.ensure(8);
    this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.buf.writeUInt32LE(high >>> 0, this.pos + 4);
    this.pos += 8;
  }
}

/** A lowercase hex digit's value. */
const nibble = (c: number) => (c >= 0x61 ? c - 0x57 : c - 0x30);

const varintSize = (v: number) => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);

const MAX_INT64 = 2 ** 63;

/** An AnyValue's field: string, bool, int64 for integers, double otherwise, or an array of them. */
function anyValue(w: ProtoWriter, v: string | number | boolean | string[]): void {
  if (typeof v === 'string') {
    w.tag(1, 2);
    w.string(v);
  } else if (typeof v === 'boolean') {
    w.tag(2, 0);
    w.varint(v ? 1 : 0);
  } else if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= -MAX_INT64 && v < MAX_INT64) {
      w.tag(3, 0);
      w.varint(v);
    } else {
      w.tag(4, 1);
      w.double(v);
    }
  } else {
    w.tag(5, 2);
    const array = w.start();
    for (const item of v) {
      w.tag(1, 2);
      const value = w.start();
      anyValue(w, item);
      w.end(value);
    }
    w.end(array);
  }
}

/** Repeated KeyValue under `field`. */
function attributes(w: ProtoWriter, field: number, attrs: SpanShape['attributes']): void {
  for (const key in attrs) {
    w.tag(field, 2);
    const kv = w.start();
    w.tag(1, 2);
    w.string(key);
    w.tag(2, 2);
    const value = w.start();
    anyValue(w, attrs[key]!);
    w.end(value);
    w.end(kv);
  }
}

/** SpanKind CLIENT (the API's 2, one more on the wire). */
const KIND_CLIENT = 3;
/** The W3C sampled flag and "the parent's remoteness is known"; with a parent (always the caller's), "it is remote". */
const FLAGS_ROOT = 0x101;
const FLAGS_REMOTE_PARENT = 0x301;
const STATUS_ERROR = 2;

/**
 * Appends one span as a ScopeSpans `spans` entry (tag, length, Span), fields in the official
 * serializer's order. `spanId` is 16 hex digits; the span's kind is CLIENT.
 */
export function writeSpan(w: ProtoWriter, s: SpanShape, spanId: string): void {
  w.tag(2, 2);
  const span = w.start();
  w.tag(1, 2);
  w.hex(s.traceId);
  w.tag(2, 2);
  w.hex(spanId);
  if (s.parentSpanId) {
    w.tag(4, 2);
    w.hex(s.parentSpanId);
  }
  w.tag(5, 2);
  w.string(s.name);
  w.tag(6, 0);
  w.varint(KIND_CLIENT);
  w.tag(7, 1);
  w.timeMs(s.startMs);
  w.tag(8, 1);
  w.timeMs(Math.max(s.endMs, s.startMs));
  attributes(w, 9, s.attributes);
  // The dropped attribute, event and link counts (always 0), as the official serializer writes them.
  w.tag(10, 0);
  w.varint(0);
  w.tag(12, 0);
  w.varint(0);
  w.tag(14, 0);
  w.varint(0);
  w.tag(15, 2);
  const status = w.start();
  if (s.error) {
    w.tag(2, 2);
    w.string(s.error);
  }
  w.tag(3, 0);
  w.varint(s.error ? STATUS_ERROR : 0);
  w.end(status);
  // Field 16 (flags, fixed32): a two-byte tag.
  w.ensure(2);
  w.buf[w.pos++] = (16 << 3) | 5;
  w.buf[w.pos++] = 1;
  w.fixed32(s.parentSpanId ? FLAGS_REMOTE_PARENT : FLAGS_ROOT);
  w.end(span);
}

/** The Resource and InstrumentationScope fields every request of a process repeats. */
export function requestHead(o: { resource: Record<string, string>; scope: string }) {
  const w = new ProtoWriter(256);
  w.tag(1, 2);
  const resource = w.start();
  attributes(w, 1, o.resource);
  w.tag(2, 0);
  w.varint(0);
  w.end(resource);
  const resourceField = Buffer.from(w.buf.subarray(0, w.pos));
  w.pos = 0;
  w.tag(1, 2);
  const scope = w.start();
  w.tag(1, 2);
  w.string(o.scope);
  w.end(scope);
  return { resourceField, scopeField: Buffer.from(w.buf.subarray(0, w.pos)) };
}

/** An ExportTraceServiceRequest of spans written by `writeSpan` (`spans`), under one resource and scope. */
export function exportRequest(head: ReturnType<typeof requestHead>, spans: Uint8Array): Buffer {
  const scopeSpans = head.scopeField.length + spans.length;
  const resourceSpans = head.resourceField.length + 1 + varintSize(scopeSpans) + scopeSpans;
  const w = new ProtoWriter(1 + varintSize(resourceSpans) + resourceSpans);
  w.tag(1, 2);
  w.varint(resourceSpans);
  head.resourceField.copy(w.buf, w.pos);
  w.pos += head.resourceField.length;
  w.tag(2, 2);
  w.varint(scopeSpans);
  head.scopeField.copy(w.buf, w.pos);
  w.pos += head.scopeField.length;
  w.buf.set(spans, w.pos);
  w.pos += spans.length;
  return w.buf.subarray(0, w.pos);
}
