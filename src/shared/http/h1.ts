// The gateway's HTTP/1.1 client for the daemon link and for model providers (undici instead when
// the operator sets an egress proxy: src/gateway/inference/providers/http.ts): one request per socket at a
// time over node:net or node:tls, the response read by h1-parser.ts into a Body (text or SSE
// batches, with backpressure). A gateway holds one daemon stream per open chat stream, so what a
// connection costs is what an idle stream costs: a relay through it holds 13.1 KB per idle stream
// where the same relay through an undici Pool holds 20.3 KB (bench/relay-client.ts,
// docs/performance-log.md). Connections that ended a response cleanly wait in
// h1-pool.ts for the next request to the same server, shorter than the server's own keep-alive
// so a reused socket is never one it is closing. A socket's listeners are set once, when it
// connects, and pass its events to the request it carries (CALL): a request adds and removes none.
// May import: node, ./h1-parser, ./h1-pool, ./body. Imported by src/gateway/interns/daemon-client.ts
// and src/gateway/inference/providers/http.ts.
import { connect, isIP } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { Body, type Upstream } from './body.ts';
import { ParseError, ResponseParser, type ParserEvents, type ResponseHead } from './h1-parser.ts';
import { CALL, IdlePool, type Carrier } from './h1-pool.ts';

export type H1Request = {
  /** `http://host:port` or `https://host:port`, optionally with a path prefix; or `unix:/path/to.sock` (an intern daemon in its sandbox). */
  base: string;
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
};

export type H1Options = {
  connectTimeoutMs?: number;
  /** Keep-alive used when the server gives no `keep-alive: timeout=N` hint. */
  idleMs?: number;
  /** How many idle connections to keep per origin. */
  maxIdle?: number;
  /** For https bases (e.g. a private CA). */
  tls?: ConnectionOptions;
  /** A request fails with code ETIMEDOUT after this long without a byte in either direction (waiting for the head, or between body bytes); 0: never. */
  timeoutMs?: number;
};

type Endpoint = { host: string; port: number; hostHeader: string; prefix: string; tls: boolean; socketPath?: string };

const SAFE = /^[\x21-\x7e]+$/;
const SAFE_VALUE = /^[\x20-\x7e]*$/;

function endpoint(base: string): Endpoint {
  if (base.startsWith('unix:'))
    return { host: 'localhost', port: 0, hostHeader: 'localhost', prefix: '', tls: false, socketPath: base.slice(5) };
  const u = new URL(base);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported protocol ${u.protocol}`);
  const tls = u.protocol === 'https:';
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || (tls ? 443 : 80)),
    hostHeader: u.host,
    prefix: u.pathname.replace(/\/$/, ''),
    tls,
  };
}

function serialize(r: H1Request, ep: Endpoint): string {
  const path = ep.prefix + r.path;
  if (!SAFE.test(path)) throw new Error('invalid request path');
  let head = `${r.method} ${path} HTTP/1.1\r\nhost: ${ep.hostHeader}\r\n`;
  for (const [k, v] of Object.entries(r.headers)) {
    if (!SAFE.test(k) || !SAFE_VALUE.test(v)) throw new Error(`invalid header ${k}`);
    head += `${k}: ${v}\r\n`;
  }
  const body = r.body ?? '';
  return `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The server's keep-alive hint, less a margin so we never reuse a socket it is about to close. */
function idleFor(head: ResponseHead, fallback: number): number {
  const m = /timeout=(\d+)/.exec(head.headers['keep-alive'] ?? '');
  return m ? Math.max(0, Number(m[1]) * 1000 - 2000) : fallback;
}

/** A request under way: its response once the head arrived, and a way to give it up at any point. */
export type InFlight = {
  response: Promise<Upstream>;
  /** Closes the connection; a response not yet arrived rejects with `reason` as is (not through toError). */
  cancel(reason?: Error): void;
};

/** One request on one socket, which passes it its events while it is the socket's CALL. */
class Call implements InFlight, ParserEvents {
  private readonly parser: ResponseParser;
  readonly body: Body;
  readonly response: Promise<Upstream>;
  /** The response's settling functions, until one is used (an open stream holds this call for minutes). */
  private settle: { resolve: (u: Upstream) => void; reject: (e: unknown) => void } | null = null;
  private cancelled = false;
  /** The socket is no longer this call's: released to the pool or destroyed. */
  private finished = false;
  private idleMs = 0;

  constructor(
    private readonly client: H1Client,
    private readonly key: string,
    private readonly socket: Carrier,
    private readonly toError: (err: unknown) => unknown,
  ) {
    this.response = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.body = new Body(this);
    this.parser = new ResponseParser(this);
    socket[CALL] = this;
  }

  readonly cancel = (reason: Error = new Error('aborted')): void => {
    this.cancelled = true;
    this.fail(reason);
  };

  // ---- the body's flow control ----
  pause(): void {
    if (!this.finished) this.socket.pause();
  }

  resume(): void {
    if (!this.finished) this.socket.resume();
  }

  abort(err: Error): void {
    this.fail(err);
  }

  // ---- the parser's events (this object is the parser's listener) ----
  data(chunk: Buffer): void {
    this.body.data(chunk);
  }

  /** The socket's handlers act once the parser returns (complete()), so the end needs nothing here. */
  end(): void {}

  head(h: ResponseHead): void {
    this.body.statusCode = h.status;
    this.body.headers = h.headers;
    this.idleMs = idleFor(h, this.client.idleMs);
    const settle = this.settle;
    this.settle = null;
    settle?.resolve(this.body);
  }

  /** The response ended on its framing: the socket goes back to the pool if it may carry another request. */
  private complete(): void {
    this.finished = true;
    this.detach();
    if (this.parser.reusableAfterEnd && !this.cancelled && this.idleMs > 0)
      this.client.release(this.key, this.socket, this.idleMs);
    else this.socket.destroy();
    this.body.end();
  }

  // ---- socket events (see the listeners below the class) ----
  onData(chunk: Buffer): void {
    try {
      this.parser.feed(chunk);
    } catch (err) {
      return this.fail(err);
    }
    this.body.flush();
    if (this.parser.done) this.complete();
  }

  onEnd(): void {
    try {
      this.parser.eof();
    } catch (err) {
      return this.fail(err);
    }
    this.complete();
  }

  private fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.detach();
    this.socket.destroy();
    const e = this.cancelled ? err : this.toError(err);
    const settle = this.settle;
    this.settle = null;
    settle?.reject(e);
    this.body.error(e);
  }

  private detach(): void {
    this.socket[CALL] = null;
  }
}

// A socket's listeners for its whole life: its events go to the call it carries; one idle in the
// pool that hears from its server (bytes nobody asked for, a close) is destroyed, and the pool
// skips destroyed sockets.
function onData(this: Carrier, chunk: Buffer): void {
  const call = this[CALL];
  if (call) call.onData(chunk);
  else this.destroy();
}
function onEnd(this: Carrier): void {
  const call = this[CALL];
  if (call) call.onEnd();
  else this.destroy();
}
function onError(this: Carrier, err: Error): void {
  this[CALL]?.abort(err);
}
function onClose(this: Carrier): void {
  this[CALL]?.abort(new ParseError('the connection closed before the response ended'));
}
/** Idle time in the pool is not waiting for an answer: only a call times out. */
function onTimeout(this: Carrier): void {
  this[CALL]?.abort(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' }));
}

export class H1Client {
  readonly idleMs: number;
  readonly timeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly pool: IdlePool;
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly tls: ConnectionOptions;

  constructor(opts: H1Options = {}) {
    this.tls = opts.tls ?? {};
    this.idleMs = opts.idleMs ?? 3_000;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 5_000;
    this.timeoutMs = opts.timeoutMs ?? 0;
    this.pool = new IdlePool(opts.maxIdle ?? 256);
  }

  /** Sends the request. `toError` maps transport failures (not cancellations). */
  start(r: H1Request, toError: (err: unknown) => unknown): InFlight {
    let wire: string;
    let ep: Endpoint;
    try {
      ep = this.endpoint(r.base);
      wire = serialize(r, ep);
    } catch (err) {
      return { response: Promise.reject(toError(err)), cancel: () => {} };
    }
    const socket = this.pool.take(r.base) ?? this.connect(ep);
    const call = new Call(this, r.base, socket, toError);
    socket.write(wire);
    return call;
  }

  /** start(), given up when the signal aborts (with the signal's reason). */
  request(r: H1Request, signal: AbortSignal, toError: (err: unknown) => unknown): Promise<Upstream> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const call = this.start(r, toError);
    const abort = () => call.cancel(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', abort, { once: true });
    return call.response;
  }

  /** Closes every idle connection (open streams are their callers'). */
  close(): void {
    this.pool.close();
  }

  /** @internal Called by a Call whose response ended cleanly. */
  release(key: string, socket: Carrier, ms: number): void {
    this.pool.put(key, socket, ms);
  }

  private endpoint(base: string): Endpoint {
    let ep = this.endpoints.get(base);
    if (!ep) {
      ep = endpoint(base);
      if (this.endpoints.size < 10_000) this.endpoints.set(base, ep);
    }
    return ep;
  }

  private connect(ep: Endpoint): Carrier {
    const opts = { host: ep.host, port: ep.port, noDelay: true, keepAlive: true, keepAliveInitialDelay: 60_000 };
    const socket: Carrier = ep.socketPath
      ? connect({ path: ep.socketPath })
      : ep.tls
        ? connectTls({ ...this.tls, ...opts, servername: isIP(ep.host) ? undefined : ep.host })
        : connect(opts);
    socket[CALL] = null;
    socket.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    // A listener of its own: setTimeout's callback is a once listener, which a first silence while
    // idle in the pool (no call to time out) would use up, leaving later calls with no timeout.
    if (this.timeoutMs) socket.setTimeout(this.timeoutMs).on('timeout', onTimeout);
    const connected = ep.tls ? 'secureConnect' : 'connect';
    const timer = setTimeout(
      () => socket.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
      this.connectTimeoutMs,
    );
    // Both listeners go once either fires, so an open stream does not keep the spent timer.
    const done = () => {
      clearTimeout(timer);
      socket.off(connected, done).off('close', done);
    };
    socket.on(connected, done).on('close', done);
    return socket;
  }
}
