// HTTP to upstream providers, over one client for every provider: a POST whose transport failures
// become UpstreamError (timeouts and connection errors are retryable, status 0), and the mapping of
// a non-2xx answer to an UpstreamError carrying the provider's own message (secrets are scrubbed
// where every failure becomes an API error: src/gateway/inference/attempts.ts). With an egress
// proxy configured (HTTP_PROXY, HTTPS_PROXY, NO_PROXY: companies' self-hosted gateways often reach
// providers only through one), undici's proxy agent; without one, the lean client of
// src/shared/http/h1.ts, which the daemon link uses too: it costs a model request a third of
// undici's CPU (docs/performance-log.md, the hot path regained).
import { EnvHttpProxyAgent, type Dispatcher } from 'undici';
import { UpstreamError, type Cancel } from '../types.ts';
import { Body, type Flow, type Upstream } from '../../../shared/http/body.ts';
import { H1Client } from '../../../shared/http/h1.ts';

type PostOptions = { base: string; path: string; headers: Record<string, string>; body: string; cancel: Cancel };

export type HttpClient = {
  /** Sends the POST; the promise settles with the answer's head (its body streams after). */
  post(o: PostOptions): Promise<Upstream>;
  /** Closes the idle connections (at shutdown every request has ended). */
  close(): Promise<void>;
};

const PROXY_VARIABLES = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'];

/** One client for every provider, built once. With a proxy variable, undici's proxy agent
 * (proxies read from the environment now, NO_PROXY on each request); without, the lean client.
 * `timeoutMs` bounds the wait for the answer and each silence within it. */
export function createHttpClient(opts: { timeoutMs: number }): HttpClient {
  if (!PROXY_VARIABLES.some((v) => process.env[v])) return leanClient(opts);
  const options = {
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connectTimeout: Math.min(opts.timeoutMs, 10_000),
    // Many concurrent streams to few origins: no cap on connections per origin, one request per
    // connection at a time (a pipelined POST waits behind a stream), idle ones kept as the lean client did.
    connections: null,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    // A server's keep-alive hint less this, so a reused socket is never one it is closing.
    keepAliveTimeoutThreshold: 2_000,
  };
  const dispatcher = new EnvHttpProxyAgent(options);
  return { post: (o) => dispatchPost(dispatcher, o), close: () => dispatcher.destroy() };
}

/** Keep-alive when a provider gives no hint (its hint less 2 s otherwise), and idle connections kept per provider. */
const IDLE_MS = 30_000;
const MAX_IDLE = 1024;

function leanClient(opts: { timeoutMs: number }): HttpClient {
  const h1 = new H1Client({
    timeoutMs: opts.timeoutMs,
    connectTimeoutMs: Math.min(opts.timeoutMs, 10_000),
    idleMs: IDLE_MS,
    maxIdle: MAX_IDLE,
  });
  return {
    post(o) {
      const { cancel } = o;
      if (cancel.aborted) return Promise.reject(new Error('aborted'));
      const call = h1.start(
        {
          base: o.base,
          path: o.path,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...o.headers },
          body: o.body,
        },
        (err) => transportError(err, cancel),
      );
      cancel.onCancel(call.cancel);
      return call.response;
    },
    close: async () => h1.close(),
  };
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

/** A transport failure as an UpstreamError; a client abort is rethrown as is. */
export function transportError(err: unknown, cancel: Cancel): unknown {
  if (cancel.aborted || err instanceof UpstreamError) return err;
  const code = (err as { code?: string }).code ?? 'unknown';
  if (TIMEOUTS.has(code))
    return new UpstreamError({ status: 0, timeout: true, message: 'the provider did not answer in time' });
  return new UpstreamError({ status: 0, message: `could not reach the provider (${code})` });
}

type Target = { origin: string; prefix: string };
const targets = new Map<string, Target>();

/** A provider's base URL as undici's origin and a path prefix (such as /v1), parsed once per base. */
function target(base: string): Target {
  let t = targets.get(base);
  if (!t) {
    const u = new URL(base);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported protocol ${u.protocol}`);
    t = { origin: u.origin, prefix: u.pathname.replace(/\/$/, '') };
    if (targets.size < 10_000) targets.set(base, t);
  }
  return t;
}

/** One POST as undici's dispatch handler, feeding its response into a Body (text or SSE batches),
 * which pauses and resumes it, or gives it up, through this object. The body's reads are batched
 * per network read (a microtask after undici hands over the read's chunks), so a relay writes a
 * read's events at once. undici's request() would wrap the same bytes in a Readable stream. */
class Exchange implements Dispatcher.DispatchHandler, Flow {
  readonly body = new Body(this);
  readonly response: Promise<Upstream>;
  private settle: { resolve: (u: Upstream) => void; reject: (e: unknown) => void } | null = null;
  private controller: Dispatcher.DispatchController | null = null;
  private flushing = false;

  constructor(private readonly cancel: Cancel) {
    this.response = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }

  /** The client went away: before the request is written it is never sent, after it its connection closes. */
  readonly onCancelled = (): void => {
    const reason = new Error('aborted');
    if (this.controller) this.controller.abort(reason);
    else this.fail(reason);
  };

  // ---- the body's flow control ----
  pause(): void {
    this.controller?.pause();
  }

  resume(): void {
    this.controller?.resume();
  }

  abort(err: Error): void {
    this.controller?.abort(err);
  }

  // ---- undici's events ----
  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.cancel.aborted) return controller.abort(new Error('aborted'));
    this.controller = controller;
  }

  onResponseStart(_: Dispatcher.DispatchController, statusCode: number, headers: Upstream['headers']): void {
    this.body.statusCode = statusCode;
    this.body.headers = headers;
    const settle = this.settle;
    this.settle = null;
    settle?.resolve(this.body);
  }

  onResponseData(_: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body.data(chunk);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(this.flush);
  }

  onResponseEnd(): void {
    this.body.end();
  }

  onResponseError(_: Dispatcher.DispatchController, err: Error): void {
    this.fail(transportError(err, this.cancel));
  }

  private readonly flush = (): void => {
    this.flushing = false;
    this.body.flush();
  };

  private fail(err: unknown): void {
    const settle = this.settle;
    this.settle = null;
    settle?.reject(err);
    this.body.error(err);
  }
}

/** POSTs to `base` + `path` (base: the provider's URL, which may carry a path prefix such as /v1);
 * a cancellation closes the connection, before the answer or while its body streams. */
export function post(opts: PostOptions & { client: HttpClient }): Promise<Upstream> {
  return opts.client.post(opts);
}

/** The POST through any undici dispatcher (the proxy agent here; bench/relay-client.ts measures it on a Pool). */
export function dispatchPost(dispatcher: Dispatcher, opts: PostOptions): Promise<Upstream> {
  const { cancel } = opts;
  if (cancel.aborted) return Promise.reject(new Error('aborted'));
  let t: Target;
  try {
    t = target(opts.base);
  } catch (err) {
    return Promise.reject(transportError(err, cancel));
  }
  const exchange = new Exchange(cancel);
  const headers = { 'content-type': 'application/json', ...opts.headers };
  dispatcher.dispatch(
    { origin: t.origin, path: t.prefix + opts.path, method: 'POST', headers, body: opts.body },
    exchange,
  );
  cancel.onCancel(exchange.onCancelled);
  return exchange.response;
}

/** A non-200 answer as an UpstreamError with the provider's message, unscrubbed, or '' when its
 * body has none (its body is consumed). */
export async function failure(res: Upstream): Promise<UpstreamError> {
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 500);
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message);
    if (typeof m === 'string') message = m;
  } catch {}
  return new UpstreamError({ status: res.statusCode, message });
}

/** JSON of a 2xx body; a body that is not JSON is a retryable bad-gateway failure. */
export async function jsonBody(res: Upstream): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError({ status: 502, message: 'the provider answered with a malformed body' });
  }
}
