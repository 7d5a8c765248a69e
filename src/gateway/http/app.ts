// The gateway's HTTP application: request ids, body limits, auth guards, one error handler
// rendering every refusal in one shape (docs/reference/errors.md). Route modules register under /api/v1.
// May import: access (principals), store errors, the error registry, config, log. Never imported by the daemon or agent.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Principal } from '../access/identity-store.ts';
import {
  ApiError,
  departedCreator,
  errorBody,
  internalError,
  invalidRequest,
  managementOnly,
  outsideProgramme,
  payloadTooLarge,
} from '../errors.ts';
import { scrub } from '../../shared/log.ts';
import { isUnstorableCharacter } from '../store/errors.ts';
import type { Ctx } from '../context.ts';
import { lazyChild } from './request-logger.ts';
import { nestsDeeperThan } from './json-depth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** Chat routes render `metadata` {reason, retryable}; management routes do not. */
    errorStyle?: 'chat' | 'management';
  }
}

export const BODY_LIMIT = 1_048_576;
const MAX_PARAM_LENGTH = 8_192;
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'the request line and headers exceed 16 KiB'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request was not received in time'],
};
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export type RouteModule = (app: FastifyInstance, ctx: Ctx) => void;

/** Who may call a route (docs/reference/api.md#authentication): any valid key; a management key; a member
 * of the interns programme. */
export type Guard = 'management' | 'any' | 'interns';

/** The principal of an authenticated request; routes call this after their guard ran. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw internalError();
  return req.principal;
}

/** An onRequest hook that authenticates the caller, then lets `admit` refuse it. A key already
 * in the cache is admitted without a promise or a turn of the event loop: this runs on every request. */
export function authHook(ctx: Ctx, admit: (p: Principal) => ApiError | null) {
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const finish = (p: Principal | ApiError) => {
      const refusal = p instanceof ApiError ? p : admit(p);
      if (!refusal) req.principal = p as Principal;
      done(refusal ?? undefined);
    };
    const known = ctx.auth.known(req.headers.authorization);
    if (known !== undefined) return finish(known);
    ctx.auth.authenticate(req.headers.authorization).then(finish, done);
  };
}

/** A plain 404 (no `metadata`) for a caller outside the interns programme, before anything else is checked. */

/** 401 without a valid key, then the guard's own refusals, none of which carries `metadata`. For
 * `interns` (every path under /interns): the programme's 404 first, then the departed-creator 403. */
export function guard(ctx: Ctx, kind: Guard) {
  return authHook(ctx, (p) => {
    if (kind === 'interns' && !p.internsProgramme) return outsideProgramme();
    if (kind === 'management' && p.kind !== 'management') return managementOnly();
    if (kind !== 'any' && p.creatorDeparted && !p.granted) return departedCreator();
    return null;
  });
}

/** The guard of a path the router could not match (over-long parameter, bad encoding), so such a
 * request is refused in the order its route would refuse it: who is asking first. */
function guardOfPath(url: string): Guard {
  const section = /^\/api\/v1\/([^/?]*)/.exec(url)?.[1];
  if (section === 'interns') return 'interns';
  return ['workspaces', 'presets', 'byok', 'keys', 'guardrails'].includes(section ?? '') ? 'management' : 'any';
}

/** Route-level onSend for management writes: model requests see the change at once instead of
 * after the routing cache's TTL, in this gateway and (with REDIS_URL) in every other. */
export function dropsRoutingCache(ctx: Ctx) {
  return async (_req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode < 400) await ctx.inference.invalidate();
    return payload;
  };
}

function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return invalidRequest('Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidRequest('body: a JSON object is required');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalidRequest('Content-Length does not match the body');
  }
  if (err instanceof SyntaxError || e.code === 'FST_ERR_CTP_INVALID_JSON_BODY')
    return invalidRequest('body: malformed JSON');
  // The schemas refuse these in stored fields (./stored.schemas.ts); this covers any other value that
  // reaches a query (a path parameter, a field a schema missed), so none can be a 500.
  if (isUnstorableCharacter(err))
    return invalidRequest('a value contains U+0000 (NUL), which the database cannot store');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500)
    return invalidRequest(scrub(e.message ?? 'bad request'));
  return null;
}

const noSchemaCompiler = () => () => {
  throw new Error('route schemas are not used: validate with parseWith and a Zod schema');
};

export function buildApp(ctx: Ctx, modules: RouteModule[], rootModules: RouteModule[] = []): FastifyInstance {
  const app = Fastify({
    // Fastify is given no logger of its own: with one, it holds every request's request and reply
    // objects until the response ends, for a chat stream minutes (about 0.7 KB per open stream).
    // Each request's req.log is still ours, made at its first line; the access line is below.
    childLoggerFactory: (_none, bindings, opts) => lazyChild(ctx.log, bindings, opts),
    logController: new LogController({ disableRequestLogging: true }),
    // Bodies are validated with Zod (the `*.schemas.ts` modules) and replies serialised with JSON.stringify, so no
    // route has a Fastify schema: with compilers of our own Fastify does not load Ajv and
    // fast-json-stringify (about 2.6 MB of heap), and a schema given by mistake fails loudly.
    schemaController: { compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler } },
    bodyLimit: BODY_LIMIT,
    // Slow clients (docs/abuse-resistance.md): a request's head must arrive within the headers
    // timeout and the whole request within the request timeout; node checks them on an interval,
    // 30 s by default, which would let a slow head live that much longer.
    requestTimeout: ctx.config.connections.requestTimeoutMs,
    http: {
      headersTimeout: ctx.config.connections.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(ctx.config.connections.headersTimeoutMs / 4)),
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    forceCloseConnections: false,
    return503OnClosing: true,
    // Requests node's HTTP parser refuses (oversized head, malformed request line) never reach a
    // route; they are answered in the error shape too, and the connection closed.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const [code, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'malformed HTTP request'];
      const body = JSON.stringify({ error: { code, message } });
      if (socket.writable)
        socket.write(
          `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        );
      socket.destroy();
    },
    // Path parameters are bounded by their routes' schemas, which name the parameter; the router
    // refuses only what no real id or slug comes near.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Router-level refusals (over-long path parameter, bad URL encoding) in the documented shape,
    // after the checks every route makes first.
    frameworkErrors: (err, req, reply) => {
      const r = reply as FastifyReply;
      r.header('x-request-id', req.id);
      const kind = guardOfPath(req.url);
      guard(ctx, kind)(req, r, (refusal) => {
        const detail =
          err.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? `path: a path parameter exceeds ${MAX_PARAM_LENGTH} characters`
            : 'path: malformed URL encoding';
        const e = refusal ? (toApiError(refusal) ?? internalError()) : invalidRequest(detail);
        void r
          .code(e.status)
          .headers(e.headers)
          .type('application/json')
          .send(errorBody(e, { metadata: kind === 'interns' }));
      });
    },
  });

  // The access log is an info line, written when a response finishes; below that level no request
  // pays for it. Its listener keeps what the line needs, not the request and reply.
  const accessLog = ctx.log.isLevelEnabled('info');
  // Metrics label a request by its route pattern; one no route matched is `unmatched`.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    const { log, method, url } = req;
    const route = req.routeOptions.url ?? 'unmatched';
    const started = performance.now();
    reply.raw.once('finish', function (this: ServerResponse) {
      const ms = performance.now() - started;
      ctx.metrics.request({ route, method, status: this.statusCode, seconds: ms / 1000 });
      if (accessLog) log.info({ method, url, status: this.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
    });
    done();
  });

  // Every JSON body's nesting is bounded before it is parsed, so nothing recursive ever walks a
  // body thousands deep (JSON.stringify's RangeError was a 500); the rest is Fastify's own parser.
  const maxDepth = ctx.config.maxJsonDepth;
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (nestsDeeperThan(body as string, maxDepth))
      return done(invalidRequest(`body: JSON nests deeper than the limit of ${maxDepth} levels`), undefined);
    parseJson(req, body as string, done);
  });

  app.setErrorHandler((err, req, reply) => {
    const api = toApiError(err);
    if (!api) req.log.error({ err }, 'unhandled error');
    const e = api ?? internalError();
    const metadata = req.routeOptions.config?.errorStyle === 'chat';
    void reply.code(e.status).headers(e.headers).type('application/json').send(errorBody(e, { metadata }));
  });
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).send({ error: { code: 404, message: 'resource not found' } });
  });

  app.addHook('onRoute', (r) => ctx.docs.registered(r));
  app.register(
    async (api) => {
      for (const m of modules) m(api, ctx);
    },
    { prefix: '/api/v1' },
  );
  for (const m of rootModules) m(app, ctx);
  return app;
}
