// Broadcast (docs/guides/observability.md): spans of the workspaces that turned
// `is_observability_broadcast_enabled` on, sent to the installation's collector
// (OTEL_EXPORTER_OTLP_*) and to each destination the workspace configured. Each collector has its
// own queue: a span is queued in memory and sent in batches from a timer by its exporter, so a
// request never waits on a collector. A queue that is full (a collector slow or gone) drops the
// span; a batch the collector does not take is dropped; both are counted for /metrics
// (cohort_broadcast_spans_total).
//
// A span is recorded once it has ended (what it describes already happened). For `http/protobuf`
// (the default) it is written at once as OTLP bytes into its collector's batch (otlp-protobuf.ts),
// so nothing of the request is kept and no SDK object is made: the SDK's live Span cost about
// 30 µs a request, its finished-span record and the official serializer about 11 µs. For
// `http/json` it is kept as the SDK's finished-span record (ReadableSpan) that the official JSON
// serializer reads.
import { randomBytes } from 'node:crypto';
import { SpanKind, SpanStatusCode, TraceFlags, type HrTime, type SpanContext } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { Logger } from '../../shared/log.ts';
import { OtlpHttpExporter, type Protocol } from './exporter.ts';
import { exportRequest, ProtoWriter, requestHead, writeSpan } from './otlp-protobuf.ts';
import type { SpanShape } from './spans.ts';

export type Destination = {
  /** Stable while the destination is unchanged (its id); a new key makes a new exporter. */
  key: string;
  url: string;
  protocol: Protocol;
  headers: Record<string, string>;
  internalAllowed: boolean;
};

export type Destinations = { enabled: boolean; list: Destination[] };

export type DropReason = 'queue_full' | 'export_failed';

export type BroadcastOptions = {
  log: Logger;
  /** The operator's collector for every broadcasting workspace (OTEL_EXPORTER_OTLP_*), or null. */
  installation: Destination | null;
  /** Whether a workspace broadcasts, and its enabled destinations, headers opened. */
  destinationsOf(workspaceId: string): Promise<Destinations>;
  /** How long a workspace's destination list is trusted (other gateways' changes show within it). */
  cacheMs: number;
  onSpans?(o: { exported: number } | { dropped: number; reason: DropReason }): void;
  /** Spans each collector may have waiting or being sent; more are dropped. */
  maxQueued?: number;
  batchSize?: number;
  delayMs?: number;
  timeoutMs?: number;
};

const RESOURCE_ATTRIBUTES = { 'service.name': 'cohort' };
const RESOURCE = resourceFromAttributes(RESOURCE_ATTRIBUTES);
const SCOPE = { name: 'cohort' };
const HEAD = requestHead({ resource: RESOURCE_ATTRIBUTES, scope: SCOPE.name });
const NO_LINKS: ReadableSpan['links'] = [];
const NO_EVENTS: ReadableSpan['events'] = [];

/** Random span ids (16 hex digits) cut from a pool, refilled 512 at a time. */
let pool = '';
const spanId = () => {
  if (pool.length < 16) pool = randomBytes(4096).toString('hex');
  const id = pool.slice(0, 16);
  pool = pool.slice(16);
  return id;
};

const hr = (ms: number): HrTime => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

/** The SDK's finished-span record of a span, as the official serializers read it. */
export function readable(s: SpanShape, spanId: string): ReadableSpan {
  const context: SpanContext = { traceId: s.traceId, spanId, traceFlags: TraceFlags.SAMPLED };
  const end = Math.max(s.endMs, s.startMs);
  return {
    name: s.name,
    kind: SpanKind.CLIENT,
    spanContext: () => context,
    parentSpanContext: s.parentSpanId
      ? { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true }
      : undefined,
    startTime: hr(s.startMs),
    endTime: hr(end),
    duration: hr(end - s.startMs),
    status: s.error ? { code: SpanStatusCode.ERROR, message: s.error } : { code: SpanStatusCode.UNSET },
    attributes: s.attributes,
    links: NO_LINKS,
    events: NO_EVENTS,
    ended: true,
    resource: RESOURCE,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** A span as the collectors' queues take it: what it says, its id, and its protobuf bytes once written. */
type Recorded = { shape: SpanShape; spanId: string; bytes: Uint8Array | null };

/** Where a span's protobuf is written once for every collector that takes it (read at once, in the same call). */
const scratch = new ProtoWriter();
const protobufOf = (r: Recorded): Uint8Array => {
  if (!r.bytes) {
    scratch.pos = 0;
    writeSpan(scratch, r.shape, r.spanId);
    r.bytes = scratch.buf.subarray(0, scratch.pos);
  }
  return r.bytes;
};

/** The spans waiting for one collector, in the form its protocol sends. */
type Batch = { count(): number; add(r: Recorded): void; take(): Uint8Array | undefined };

/** Protobuf: the spans' bytes, one after another, under one request header when sent. */
function protobufBatch(): Batch {
  const w = new ProtoWriter();
  let count = 0;
  return {
    count: () => count,
    add(r) {
      const bytes = protobufOf(r);
      w.ensure(bytes.length);
      w.buf.set(bytes, w.pos);
      w.pos += bytes.length;
      count++;
    },
    take() {
      const body = exportRequest(HEAD, w.buf.subarray(0, w.pos));
      w.pos = 0;
      count = 0;
      return body;
    },
  };
}

/** JSON: the SDK's records, for the official JSON serializer. */
function jsonBatch(): Batch {
  let spans: ReadableSpan[] = [];
  return {
    count: () => spans.length,
    add: (r) => void spans.push(readable(r.shape, r.spanId)),
    take() {
      const body = JsonTraceSerializer.serializeRequest(spans);
      spans = [];
      return body;
    },
  };
}

type Sink = { record(r: Recorded): void; flush(): Promise<void>; close(): Promise<void> };

function createSink(d: Destination, o: BroadcastOptions): Sink {
  const maxQueued = o.maxQueued ?? 2048;
  const batchSize = o.batchSize ?? 512;
  const delayMs = o.delayMs ?? 1_000;
  const batch = d.protocol === 'http/json' ? jsonBatch() : protobufBatch();
  /** Spans in exports not yet answered. */
  let sending = 0;
  let timer: NodeJS.Timeout | null = null;
  const exporter = new OtlpHttpExporter({
    url: d.url,
    protocol: d.protocol,
    headers: d.headers,
    timeoutMs: o.timeoutMs ?? 5_000,
    internalAllowed: d.internalAllowed,
    onResult(n, ok) {
      sending -= n;
      o.onSpans?.(ok ? { exported: n } : { dropped: n, reason: 'export_failed' });
    },
  });
  const send = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const n = batch.count();
    if (!n) return;
    sending += n;
    exporter.export(batch.take(), n);
  };
  return {
    record(r) {
      if (batch.count() + sending >= maxQueued) return o.onSpans?.({ dropped: 1, reason: 'queue_full' });
      batch.add(r);
      if (batch.count() >= batchSize) send();
      else if (!timer) {
        timer = setTimeout(send, delayMs);
        timer.unref();
      }
    },
    async flush() {
      send();
      await exporter.forceFlush();
    },
    async close() {
      send();
      await exporter.shutdown();
    },
  };
}

export type Broadcaster = ReturnType<typeof createBroadcaster>;

export function createBroadcaster(o: BroadcastOptions) {
  const sinks = new Map<string, Sink>();
  const lists = new Map<string, { at: number; got: Destinations | null; loading: Promise<Destinations> | null }>();
  const sinkOf = (d: Destination) => {
    let s = sinks.get(d.key);
    if (!s) sinks.set(d.key, (s = createSink(d, o)));
    return s;
  };
  const retire = (keys: Iterable<string>) => {
    for (const k of keys) {
      const s = sinks.get(k);
      sinks.delete(k);
      s?.close().catch(() => {});
    }
  };

  function load(workspaceId: string): Promise<Destinations> {
    const entry = lists.get(workspaceId) ?? { at: 0, got: null, loading: null };
    lists.set(workspaceId, entry);
    entry.loading ??= o
      .destinationsOf(workspaceId)
      .then((got) => {
        const gone = (entry.got?.list ?? []).map((d) => d.key).filter((k) => !got.list.some((d) => d.key === k));
        retire(gone);
        entry.got = got;
        entry.at = Date.now();
        return got;
      })
      .catch((err: unknown) => {
        o.log.warn(
          { err, workspaceId },
          "could not read a workspace's broadcast destinations; its spans go to the installation's collector only",
        );
        return { enabled: entry.got?.enabled ?? true, list: entry.got?.list ?? [] };
      })
      .finally(() => (entry.loading = null));
    return entry.loading;
  }

  /** The span is made only when some collector will take it. */
  const send = (list: Destination[], make: () => SpanShape) => {
    if (!o.installation && !list.length) return;
    const span: Recorded = { shape: make(), spanId: spanId(), bytes: null };
    if (o.installation) sinkOf(o.installation).record(span);
    for (const d of list) sinkOf(d).record(span);
  };

  /** The workspace's destinations, from the cache when fresh (then synchronously). */
  function withDestinations(workspaceId: string, use: (got: Destinations) => void): void {
    try {
      const entry = lists.get(workspaceId);
      if (entry?.got && Date.now() - entry.at < o.cacheMs) return use(entry.got);
      load(workspaceId).then(use, () => {});
    } catch (err) {
      o.log.warn({ err }, 'could not queue a broadcast span');
    }
  }

  return {
    /** Queues a span of a workspace known to broadcast for its collectors; returns at once. */
    emit(workspaceId: string, make: () => SpanShape): void {
      withDestinations(workspaceId, (got) => send(got.list, make));
    },
    /** Queues a span if the workspace broadcasts (read with its destinations). */
    emitIfBroadcasting(workspaceId: string, make: () => SpanShape): void {
      withDestinations(workspaceId, (got) => {
        if (got.enabled) send(got.list, make);
      });
    },
    /** Forgets a workspace's destinations (a management change here); other gateways see it within cacheMs. */
    invalidate(workspaceId: string): void {
      const entry = lists.get(workspaceId);
      if (entry) entry.at = 0;
    },
    /** Sends what is queued now (tests, and the shutdown). */
    async flush(): Promise<void> {
      await Promise.all([...lists.values()].map((e) => e.loading));
      await Promise.all([...sinks.values()].map((s) => s.flush().catch(() => {})));
    },
    async close(): Promise<void> {
      await Promise.all([...sinks.values()].map((s) => s.close().catch(() => {})));
      sinks.clear();
    },
  };
}
