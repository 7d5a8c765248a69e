// The daemon's HTTP surface (docs/daemon-protocol.md): bearer auth, JSON bodies, SSE streams.
// Thin: every decision is the Intern's; this file only parses, routes and writes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import {
  AnswerRequest,
  DAEMON_PROTOCOL_VERSION,
  HibernateRequest,
  MAX_BODY_BYTES,
  REFUSALS,
  TurnRequest,
  formatRunEvent,
  refusalBody,
  type RefusalKind,
  type RunEvent,
} from '../../shared/daemon-protocol.ts';
import type { Intern, Result } from './intern.ts';
import type { Sink } from './run.ts';

/** An SSE response that sends its headers with the first event, so a refusal can still be JSON. */
class SseSink implements Sink {
  private open = false;
  private timer: NodeJS.Timeout | null = null;
  constructor(
    private readonly res: ServerResponse,
    private readonly keepaliveMs: number,
  ) {}

  begin(): void {
    if (this.open) return;
    this.open = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    this.res.flushHeaders();
    this.keepalive();
  }

  write(e: RunEvent): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    this.begin();
    this.res.write(formatRunEvent(e));
    this.keepalive();
  }

  end(): void {
    this.begin();
    if (this.timer) clearTimeout(this.timer);
    this.res.end();
  }

  onClose(cb: () => void): void {
    if (this.res.destroyed || this.res.writableFinished) return cb();
    this.res.on('close', cb);
  }

  private keepalive(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.res.writableEnded || this.res.destroyed) return;
      this.res.write(': keepalive\n\n');
      this.keepalive();
    }, this.keepaliveMs);
    this.timer.unref();
  }
}

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

function sendResult(res: ServerResponse, r: Result): void {
  if (r.kind === 'refusal') sendRefusal(res, r.refusal, r.message, r.retryAfterS);
  else if (r.kind === 'steered') sendJson(res, 202, { session_id: r.session_id, status: 'steered' });
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

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://daemon');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/v1/health')
      return sendJson(res, 200, { status: 'ok', protocol: DAEMON_PROTOCOL_VERSION });
    if (!authorized(req)) return sendJson(res, 401, refusalBody('unauthorized', 'missing or wrong daemon secret'));
    if (req.method === 'GET' && path === '/v1/status') return sendJson(res, 200, o.intern.status());
    const sink = () => new SseSink(res, o.keepaliveMs);
    const body = req.method === 'POST' ? await readJson(req) : undefined;

    if (req.method === 'POST' && path === '/v1/turns') {
      const p = TurnRequest.safeParse(body);
      if (!p.success)
        return sendRefusal(
          res,
          'bad_request',
          p.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
        );
      return sendResult(res, await o.intern.startTurn(p.data, sink()));
    }
    let m = /^\/v1\/sessions\/([^/]+)\/interactions\/([^/]+)$/.exec(path);
    if (req.method === 'POST' && m) {
      const p = AnswerRequest.safeParse(body);
      if (!p.success) return sendRefusal(res, 'bad_request', 'body must be {"answer": string}');
      return sendResult(
        res,
        o.intern.answer(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), p.data.answer, sink()),
      );
    }
    m = /^\/v1\/runs\/([^/]+)\/events$/.exec(path);
    if (req.method === 'GET' && m) {
      const after = Number(url.searchParams.get('after') ?? 0);
      if (!Number.isInteger(after) || after < 0)
        return sendRefusal(res, 'bad_request', 'after must be a non-negative integer');
      return sendResult(res, o.intern.attach(decodeURIComponent(m[1]!), after, sink()));
    }
    if (req.method === 'POST' && path === '/v1/hibernate') {
      const p = HibernateRequest.safeParse(body);
      if (!p.success) return sendRefusal(res, 'bad_request', 'body must be {"idle_ms": integer >= 0}');
      const r = o.intern.hibernate(p.data.idle_ms);
      return r.kind === 'refusal' ? sendResult(res, r) : sendJson(res, 200, { hibernating: true });
    }
    m = /^\/v1\/(runs|sessions)\/([^/]+)\/cancel$/.exec(path);
    if (req.method === 'POST' && m) {
      const id = decodeURIComponent(m[2]!);
      const run = await o.intern.cancel(m[1] === 'runs' ? { runId: id } : { sessionId: id });
      if (!run)
        return sendRefusal(res, 'run_not_found', m[1] === 'runs' ? `no run ${id}` : `no live run in session ${id}`);
      return sendJson(res, 200, { run_id: run.id, session_id: run.sessionId, phase: run.state.phase });
    }
    sendRefusal(res, 'run_not_found', `no route ${req.method} ${path}`);
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
