// Prometheus metrics of one gateway (GET /metrics): requests by route and status, latency
// histograms, open streams, interns by status, upstream errors by provider and the request log's
// lost and waiting rows, plus the process's
// own (memory, CPU, event loop). A registry per gateway, not prom-client's global one, so several
// gateways in one process (tests) keep their counts apart. Routes are labelled by their pattern
// (`/api/v1/interns/:id`), never the raw URL, so an id cannot grow the label set.
// May import: prom-client, node built-ins.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type Metrics = {
  /** One finished HTTP response. */
  request(o: { route: string; method: string; status: number; seconds: number }): void;
  /** One upstream attempt that failed at a provider. */
  upstreamError(provider: string): void;
  /** Hibernation (docs/fleet.md): a sleeping intern woken (and how long its daemon took), one put to sleep, a wake refused for a full queue. */
  internWoken(seconds: number): void;
  internSlept(): void;
  wakeRefused(): void;
  /** The request log (docs/failure-modes.md): rows lost for good, by reason, and a write the store did not take (retried). */
  requestLogLost(reason: string, rows: number): void;
  requestLogWriteError(): void;
  /** Broadcast (docs/guides/observability.md): spans a collector took, or dropped (queue full, or the export failed). */
  broadcastSpans(o: { exported: number } | { dropped: number; reason: string }): void;
  text(): Promise<string>;
  contentType: string;
};

export function createMetrics(o: {
  openStreams: () => number;
  internsByStatus: () => Promise<Record<string, number>>;
  internsByPower: () => Promise<Record<string, number>>;
  wakeQueue: () => { running: number; queued: number };
  requestLogPending?: () => { memory: number; disk: number };
}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'cohort_' });
  const requests = new Counter({
    name: 'cohort_http_requests_total',
    help: 'HTTP responses by route pattern, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'cohort_http_request_duration_seconds',
    help: 'Time from request to the end of its response (a stream: until it ends), by route pattern and method',
    labelNames: ['route', 'method'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  new Gauge({
    name: 'cohort_open_streams',
    help: 'SSE responses open now (intern chats and model requests)',
    registers: [registry],
    collect() {
      this.set(o.openStreams());
    },
  });
  new Gauge({
    name: 'cohort_interns',
    help: 'Interns by status, in the whole store',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [status, n] of Object.entries(await o.internsByStatus())) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'cohort_running_interns',
    help: 'Running interns by power (awake, sleeping: falling asleep, asleep, waking), in the whole store',
    labelNames: ['power'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [power, n] of Object.entries(await o.internsByPower())) this.set({ power }, n);
    },
  });
  new Gauge({
    name: 'cohort_wake_queue',
    help: "This gateway's wakes of sleeping interns: starting now, and waiting for a start",
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = o.wakeQueue();
      this.set({ state: 'starting' }, s.running);
      this.set({ state: 'waiting' }, s.queued);
    },
  });
  const wakes = new Histogram({
    name: 'cohort_intern_wake_seconds',
    help: "Time to start a sleeping intern's daemon, from its claim to its record",
    buckets: [0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  const sleeps = new Counter({
    name: 'cohort_intern_sleeps_total',
    help: 'Interns put to sleep by this gateway',
    registers: [registry],
  });
  const refused = new Counter({
    name: 'cohort_wake_refused_total',
    help: 'Chats refused 503 busy because the wake queue was full',
    registers: [registry],
  });
  const lostRows = new Counter({
    name: 'cohort_request_log_lost_rows_total',
    help: 'Request-log rows lost for good (each also logged by id), by reason: refused (the store refused a value), overflow (memory full, the disk refused the spill), shutdown (neither written nor spilled), unreadable (a spilled line)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const writeErrors = new Counter({
    name: 'cohort_request_log_write_errors_total',
    help: 'Writes of a request-log batch the store did not take (the rows are kept and retried)',
    registers: [registry],
  });
  new Gauge({
    name: 'cohort_request_log_pending_rows',
    help: 'Request-log rows not yet in the store: queued in memory, and spilled to the data dir',
    labelNames: ['where'],
    registers: [registry],
    collect() {
      const p = o.requestLogPending?.() ?? { memory: 0, disk: 0 };
      this.set({ where: 'memory' }, p.memory);
      this.set({ where: 'disk' }, p.disk);
    },
  });
  const spans = new Counter({
    name: 'cohort_broadcast_spans_total',
    help: 'Broadcast spans by outcome: exported (a collector took them) or dropped, by reason: queue_full (a collector slow or gone), export_failed (refused or not reached)',
    labelNames: ['outcome', 'reason'],
    registers: [registry],
  });
  const upstream = new Counter({
    name: 'cohort_upstream_errors_total',
    help: 'Upstream attempts that failed at a provider (before a response started), by provider',
    labelNames: ['provider'],
    registers: [registry],
  });
  return {
    request({ route, method, status, seconds }) {
      requests.inc({ route, method, status });
      latency.observe({ route, method }, seconds);
    },
    upstreamError: (provider) => upstream.inc({ provider }),
    internWoken: (seconds) => wakes.observe(seconds),
    internSlept: () => sleeps.inc(),
    wakeRefused: () => refused.inc(),
    requestLogLost: (reason, rows) => lostRows.inc({ reason }, rows),
    requestLogWriteError: () => writeErrors.inc(),
    broadcastSpans: (o) =>
      'exported' in o
        ? spans.inc({ outcome: 'exported', reason: '' }, o.exported)
        : spans.inc({ outcome: 'dropped', reason: o.reason }, o.dropped),
    text: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
