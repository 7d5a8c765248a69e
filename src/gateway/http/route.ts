// One definition per route: method, path, who may call it, its path parameters, query, headers,
// body and responses. `defineRoute` registers the Fastify route and adds its OpenAPI operation
// from that one object, so the document cannot miss a route or a parameter the route validates.
// Inputs are validated in one order (path, query, headers, body) after the guard and any `before`
// check that must refuse first; the handler receives them parsed.
// May import: zod, fastify, ./app, ./validate, ./openapi, the error registry.
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify';
import type { z } from 'zod';
import type { Ctx } from '../context.ts';
import { invalidRequest } from '../errors.ts';
import { guard, type Guard } from './app.ts';
import { capitalized as headerName, type Responses } from './openapi.ts';
import { parseWith } from './validate.ts';

type Shape = z.ZodObject;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export type Inputs<P, Q, H, B> = { params: Out<P>; query: Out<Q>; headers: Out<H>; body: Out<B> };

export type RouteSpec<
  P extends Shape | undefined,
  Q extends Shape | undefined,
  H extends Shape | undefined,
  B extends z.ZodType | undefined,
> = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify's form (`/interns/:id`); the document shows `{id}`. */
  path: string;
  summary: string;
  tags: string[];
  /** Who may call it (docs/reference/api.md#authentication); null: no key at all. */
  guard: Guard | null;
  /** Model and intern routes render `metadata` {reason, retryable} on refusals. */
  errorStyle?: 'chat';
  /** Path parameters, each with a `.describe()` the document shows. */
  params?: P;
  query?: Q;
  /** Lower-case header names, as node gives them; a failure names the header. */
  headers?: H;
  body?: B;
  /** The body's media type where it is not JSON (the document shows it). */
  bodyType?: string;
  responses: Responses;
  /** Hooks before the guard (e.g. a key sent as x-api-key) and after it. */
  beforeGuard?: onRequestHookHandler[];
  onRequest?: onRequestHookHandler[];
  onSend?: onSendHookHandler;
  /** A check that refuses before any input is validated (e.g. the key has no workspace). */
  before?: (req: FastifyRequest) => void;
  handler: (req: FastifyRequest, reply: FastifyReply, input: Inputs<P, Q, H, B>) => unknown;
};

/** A header refusal names the header as HTTP spells it: `Idempotency-Key header: …`. */
const headerRefusal = (detail: string) =>
  invalidRequest(
    detail.replace(/(^|; )([a-z0-9-]+): /g, (_m, sep: string, key: string) => `${sep}${headerName(key)} header: `),
  );

export function defineRoute<
  P extends Shape | undefined = undefined,
  Q extends Shape | undefined = undefined,
  H extends Shape | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(app: FastifyInstance, ctx: Ctx, spec: RouteSpec<P, Q, H, B>): void {
  ctx.docs.add({
    method: spec.method.toLowerCase() as Lowercase<RouteSpec<P, Q, H, B>['method']>,
    path: spec.path,
    root: app.prefix === '',
    summary: spec.summary,
    tags: spec.tags,
    secured: spec.guard !== null,
    params: spec.params,
    query: spec.query,
    headers: spec.headers,
    body: spec.body,
    bodyType: spec.bodyType,
    responses: spec.responses,
  });
  const onRequest = [
    ...(spec.beforeGuard ?? []),
    ...(spec.guard ? [guard(ctx, spec.guard)] : []),
    ...(spec.onRequest ?? []),
  ];
  app.route({
    method: spec.method,
    url: spec.path,
    onRequest,
    ...(spec.onSend ? { onSend: spec.onSend } : {}),
    ...(spec.errorStyle ? { config: { errorStyle: spec.errorStyle } } : {}),
    handler: (req, reply) => {
      spec.before?.(req);
      const input = {
        params: spec.params ? parseWith(spec.params, req.params) : undefined,
        query: spec.query ? parseWith(spec.query, req.query) : undefined,
        headers: spec.headers ? parseWith(spec.headers, req.headers, headerRefusal) : undefined,
        body: spec.body ? parseWith(spec.body, req.body) : undefined,
      } as Inputs<P, Q, H, B>;
      return spec.handler(req, reply, input);
    },
  });
}

/** The parsed body, released from the inputs: a stream may stay open for minutes, and the body
 * (up to a 1 MiB history) should not live as long as its handler. */
export function takeBody<B>(input: { body: B }): B {
  const body = input.body;
  input.body = undefined as B;
  return body;
}
