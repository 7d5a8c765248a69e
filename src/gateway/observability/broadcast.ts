// Broadcast (docs/guides/observability.md): spans of the workspaces that turned
// `is_observability_broadcast_enabled` on, sent to the installation's collector
// (OTEL_EXPORTER_OTLP_*) and to each destination the workspace configured. Each collector has its
// own OpenTelemetry TracerProvider and BatchSpanProcessor: a span is queued in memory and sent
// in batches from a timer, so a request never waits on a collector. A queue that is full (a
// collector slow or gone) drops the span; a batch the collector does not take is dropped; both
// are counted for /metrics (cohort_broadcast_spans_total).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  RandomIdGenerator,
  TracerProvider,
  type IdGenerator,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { Logger } from '../../shared/log.ts';
import { OtlpHttpExporter, type Protocol } from './exporter.ts';
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

/** The SDK's random ids, except that a root span takes the trace id it is given (the generation's, or the caller's). */
class TraceIds implements IdGenerator {
  next: string | null = null;
  private readonly random = new RandomIdGenerator();
  generateTraceId = () => this.next ?? this.random.generateTraceId();
  generateSpanId = () => this.random.generateSpanId();
}

/** The batch processor, behind a bound of our own that counts what it turns away. */
class BoundedProcessor implements SpanProcessor {
  pending = 0;
  constructor(
    private readonly inner: SpanProcessor,
    private readonly max: number,
    private readonly dropped: (n: number) => void,
  ) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (this.pending >= this.max) return this.dropped(1);
    this.pending++;
    this.inner.onEnd(span);
  }
  forceFlush = () => this.inner.forceFlush();
  shutdown = () => this.inner.shutdown();
}

type Sink = { record(s: SpanShape): void; flush(): Promise<void>; close(): Promise<void> };

function createSink(d: Destination, o: BroadcastOptions): Sink {
  const ids = new TraceIds();
  const maxQueued = o.maxQueued ?? 2048;
  let bounded: BoundedProcessor | null = null;
  const exporter = new OtlpHttpExporter({
    url: d.url,
    protocol: d.protocol,
    headers: d.headers,
    timeoutMs: o.timeoutMs ?? 5_000,
    internalAllowed: d.internalAllowed,
    onResult(n, ok) {
      if (bounded) bounded.pending = Math.max(0, bounded.pending - n);
      o.onSpans?.(ok ? { exported: n } : { dropped: n, reason: 'export_failed' });
    },
  });
  bounded = new BoundedProcessor(
    new BatchSpanProcessor({
      exporter,
      maxQueueSize: maxQueued,
      maxExportBatchSize: o.batchSize ?? 512,
      scheduledDelayMillis: o.delayMs ?? 1_000,
      exportTimeoutMillis: (o.timeoutMs ?? 5_000) + 1_000,
    }),
    maxQueued,
    (n) => o.onSpans?.({ dropped: n, reason: 'queue_full' }),
  );
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'cohort' }),
    idGenerator: ids,
    spanProcessors: [bounded],
  });
  const tracer = provider.getTracer('cohort');
  return {
    record(s) {
      let parent: Context = ROOT_CONTEXT;
      if (s.parentSpanId)
        parent = trace.setSpanContext(ROOT_CONTEXT, {
          traceId: s.traceId,
          spanId: s.parentSpanId,
          traceFlags: TraceFlags.SAMPLED,
          isRemote: true,
        });
      ids.next = s.parentSpanId ? null : s.traceId;
      let span: Span;
      try {
        span = tracer.startSpan(
          s.name,
          { kind: SpanKind.CLIENT, startTime: s.startMs, attributes: s.attributes },
          parent,
        ) as Span;
      } finally {
        ids.next = null;
      }
      if (s.error) span.setStatus({ code: SpanStatusCode.ERROR, message: s.error });
      span.end(s.endMs);
    },
    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
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

  const send = (list: Destination[], span: SpanShape) => {
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
    emit(workspaceId: string, span: SpanShape): void {
      withDestinations(workspaceId, (got) => send(got.list, span));
    },
    /** Queues a span if the workspace broadcasts (read with its destinations); `make` runs only then. */
    emitIfBroadcasting(workspaceId: string, make: () => SpanShape): void {
      withDestinations(workspaceId, (got) => {
        if (got.enabled) send(got.list, make());
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
