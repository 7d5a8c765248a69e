// The daemon's HTTP surface (docs/daemon-protocol.md): bearer auth, JSON bodies, SSE streams.
// Thin: every decision is the Intern's; this file only reads, authorizes, validates and writes
// for the routes defined in routes.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import {
  MAX_BODY_BYTES,
  REFUSALS,
  formatRunEvent,
  refusalBody,
  type RefusalKind,
  type RunEvent,
} from '../../shared/daemon-protocol.ts';
import { openSse, type SseWriter } from '../../shared/sse/write.ts';
import type { Intern } from './intern.ts';
import type { Sink } from './run.ts';
import { daemonRoutes, matcher, type Reply } from './routes.ts';

/** An SSE response opened at the first event (so a refusal can still be JSON), on the one SSE writer. */
class SseSink implements Sink {
  private sse: SseWriter | null = null;
  constructor(
    private readonly res: ServerResponse,
    private readonly keepaliveMs: number,
  ) {}

  begin(): void {
    if (this.sse) return;
    this.sse = openSse(this.res, { keepaliveMs: this.keepaliveMs });
    // The gateway holds its client's status until the run's first event: the 200 leaves now.
    this.res.flushHeaders();
  }

  write(e: RunEvent): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    this.begin();
    // The gateway reads at its own pace through its own backpressure; a run's events are few.
    this.sse!.send(formatRunEvent(e), noop);
  }

  end(): void {
    this.begin();
    this.sse!.end('');
  }

  onClose(cb: () => void): void {
    if (this.res.destroyed || this.res.writableFinished) return cb();
    this.res.on('close', cb);
  }
}

const noop = () => {};

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function sendRefusal(res: ServerResponse, kind: RefusalKind, message: string, retryAfterS?: number): void {
  sendJson(
    res,
    REFUSALS[kind].status,
    refusalBody(kind, message),
    retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) },
  );
}

function send(res: ServerResponse, r: Reply): void {
  if (r.kind === 'refusal') sendRefusal(res, r.refusal, r.message, r.retryAfterS);
  else if (r.kind === 'steered') sendJson(res, 202, { session_id: r.session_id, status: 'steered' });
  else if (r.kind === 'json') sendJson(res, r.status, r.body);
}

class TooLarge extends Error {}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY_BYTES) throw new TooLarge();
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : JSON.parse(text);
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export type HttpOptions = { intern: Intern; secret: string; keepaliveMs: number; log: Logger };

export function createDaemonServer(o: HttpOptions): Server {
  const secret = digest(o.secret);
  const authorized = (req: IncomingMessage) => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    // Hashing first gives equal lengths, so the comparison is constant-time whatever was sent.
    return m !== null && timingSafeEqual(digest(m[1]!), secret);
  };

  const match = matcher(daemonRoutes(o.intern));

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://daemon');
    const found = match(req.method ?? '', url.pathname);
    if (!found?.route.open && !authorized(req))
      return sendJson(res, 401, refusalBody('unauthorized', 'missing or wrong daemon secret'));
    // Read before the route is known, so an unknown route's body is held to the same bounds.
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (!found) return sendRefusal(res, 'run_not_found', `no route ${req.method} ${url.pathname}`);
    const { route: r } = found;
    const params = Object.fromEntries(Object.entries(found.params).map(([k, v]) => [k, decodeURIComponent(v)]));
    const parsed = r.body?.safeParse(body);
    if (parsed && !parsed.success)
      return sendRefusal(
        res,
        'bad_request',
        r.badBody ?? parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
      );
    const sink = () => new SseSink(res, o.keepaliveMs);
    send(res, await r.handler({ params, query: url.searchParams, body: parsed?.data, sink }));
  }

  return createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (err instanceof TooLarge) return sendRefusal(res, 'payload_too_large', 'request body exceeds 1 MiB');
      if (err instanceof SyntaxError) return sendRefusal(res, 'bad_request', 'body is not valid JSON');
      o.log.error({ err: (err as Error).message }, 'request failed');
      sendJson(res, 500, { error: { code: 500, message: 'internal error' } });
    });
  });
}
