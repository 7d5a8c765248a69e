// Prometheus metrics of one gateway (GET /metrics): requests by route and status, latency
// histograms, open streams, interns by status and upstream errors by provider, plus the process's
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
  text(): Promise<string>;
  contentType: string;
};

export function createMetrics(o: { openStreams: () => number; internsByStatus: () => Promise<Record<string, number>> }): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'cohort_' });
  const requests = new Counter({ name: 'cohort_http_requests_total', help: 'HTTP responses by route pattern, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] });
  const latency = new Histogram({
    name: 'cohort_http_request_duration_seconds',
    help: 'Time from request to the end of its response (a stream: until it ends), by route pattern and method',
    labelNames: ['route', 'method'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  new Gauge({ name: 'cohort_open_streams', help: 'SSE responses open now (intern chats and model requests)', registers: [registry], collect() { this.set(o.openStreams()); } });
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
  const upstream = new Counter({ name: 'cohort_upstream_errors_total', help: 'Upstream attempts that failed at a provider (before a response started), by provider', labelNames: ['provider'], registers: [registry] });
  return {
    request({ route, method, status, seconds }) {
      requests.inc({ route, method, status });
      latency.observe({ route, method }, seconds);
    },
    upstreamError: (provider) => upstream.inc({ provider }),
    text: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
