// Intern lifecycle routes: create, list, get, update, provision, suspend, delete. Shapes and
// success codes as the official SDK models them. Refusals render `metadata` where they have a reason.
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteModule } from '../http/app.ts';
import { guard, principalOf } from '../http/app.ts';
import type { Ctx } from '../context.ts';
import { parseWith } from '../http/validate.ts';
import { invalidRequest } from '../errors.ts';
import { CreateIntern, IdempotencyKey, Intern, InternList, LifecycleError, ListInternsQuery, UpdateIntern } from './interns.schemas.ts';
import { createIntern, findIntern, listInterns, toIntern, updateIntern } from './interns.ts';

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, { description: 'error', schema: LifecycleError }]));
const idParam = { id: 'intern id' };
const tags = ['interns'];
type Id = { Params: { id: string } };
/** Provision, suspend and delete take no body: one carrying any field is refused, not ignored. */
const NoBody = z.strictObject({}).optional();
/** The SDK sends this flag; the local provisioner keeps no workspace archive, so there is nothing to acknowledge. */
const DeleteBody = z.strictObject({ acknowledge_workspace_loss: z.boolean().optional() }).optional();
/** Many clients send `Content-Type: application/json` on every request: with an empty body it
 * means no body, not a malformed one, on the routes that take none. */
const emptyIsNone = (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
  const length = req.headers['content-length'];
  if (length === '0' || (length === undefined && req.headers['transfer-encoding'] === undefined)) delete req.headers['content-type'];
  done();
};

/** `agent` must name an entry of the operator's catalogue. */
function knownAgent<T extends { agent?: string }>(ctx: Ctx, body: T): T {
  if (body.agent !== undefined && !ctx.agents.get(body.agent)) throw invalidRequest(`agent: unknown agent "${body.agent}"; this installation offers ${ctx.agents.ids().join(', ')}`);
  return body;
}

export const internRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'interns');
  const config = { errorStyle: 'chat' as const };
  const bodiless = [onRequest, emptyIsNone];
  const db = ctx.store.db;

  ctx.docs.add({ method: 'post', path: '/interns', summary: 'Create an intern (Idempotency-Key header makes retries return the same intern)', tags, body: CreateIntern, responses: { 201: { description: 'created', schema: Intern }, ...errors(400, 401, 403, 404, 409, 413, 500) } });
  app.post('/interns', { onRequest, config }, async (req, reply) => {
    const body = knownAgent(ctx, parseWith(CreateIntern, req.body));
    const given = req.headers['idempotency-key'];
    const idempotencyKey = given === undefined ? undefined : parseWith(IdempotencyKey, given, (d) => invalidRequest(`Idempotency-Key header: ${d.replace(/^body: /, '')}`));
    const { row, replayed } = await createIntern(db, { principal: principalOf(req), sealer: ctx.sealer, body, idempotencyKey, maxPerAccount: ctx.config.maxInternsPerAccount });
    if (body.provision && !replayed) await ctx.interns.provision(row);
    const fresh = await findIntern(db, { principal: principalOf(req), id: row.id });
    return reply.code(201).send(toIntern(fresh));
  });

  ctx.docs.add({ method: 'get', path: '/interns', summary: 'List interns, newest first', tags, responses: { 200: { description: 'page', schema: InternList }, ...errors(400, 401, 403, 404, 500) } });
  app.get('/interns', { onRequest, config }, async (req) => {
    return listInterns(db, { principal: principalOf(req), query: parseWith(ListInternsQuery, req.query) });
  });

  ctx.docs.add({ method: 'get', path: '/interns/:id', summary: 'Get an intern', tags, params: idParam, responses: { 200: { description: 'intern', schema: Intern }, ...errors(401, 403, 404, 500) } });
  app.get<Id>('/interns/:id', { onRequest, config }, async (req) => toIntern(await findIntern(db, { principal: principalOf(req), id: req.params.id })));

  ctx.docs.add({ method: 'patch', path: '/interns/:id', summary: 'Update an intern (model and instructions reach its agent at the next provision)', tags, params: idParam, body: UpdateIntern, responses: { 200: { description: 'updated', schema: Intern }, ...errors(400, 401, 403, 404, 409, 500) } });
  app.patch<Id>('/interns/:id', { onRequest, config }, async (req) => {
    const body = knownAgent(ctx, parseWith(UpdateIntern, req.body));
    return toIntern(await updateIntern(db, { principal: principalOf(req), id: req.params.id, body }));
  });

  ctx.docs.add({ method: 'post', path: '/interns/:id/provision', summary: "Start (or restart) the intern's daemon", tags, params: idParam, responses: { 202: { description: 'accepted', schema: z.object({ provisioning: z.literal(true) }) }, ...errors(401, 403, 404, 409, 500) } });
  app.post<Id>('/interns/:id/provision', { onRequest: bodiless, config }, async (req, reply) => {
    parseWith(NoBody, req.body);
    await ctx.interns.provision(await findIntern(db, { principal: principalOf(req), id: req.params.id }));
    return reply.code(202).send({ provisioning: true });
  });

  ctx.docs.add({ method: 'post', path: '/interns/:id/suspend', summary: "Stop the intern's daemon", tags, params: idParam, responses: { 200: { description: 'suspended', schema: z.object({ suspended: z.literal(true) }) }, ...errors(401, 403, 404, 409, 500) } });
  app.post<Id>('/interns/:id/suspend', { onRequest: bodiless, config }, async (req) => {
    parseWith(NoBody, req.body);
    await ctx.interns.suspend(await findIntern(db, { principal: principalOf(req), id: req.params.id }));
    return { suspended: true };
  });

  ctx.docs.add({ method: 'delete', path: '/interns/:id', summary: 'Delete an intern: tears down its daemon and directory', tags, params: idParam, responses: { 202: { description: 'accepted', schema: z.object({ deleting: z.literal(true) }) }, ...errors(401, 403, 404, 500) } });
  app.delete<Id>('/interns/:id', { onRequest: bodiless, config }, async (req, reply) => {
    parseWith(DeleteBody, req.body);
    await ctx.interns.destroy(await findIntern(db, { principal: principalOf(req), id: req.params.id }));
    return reply.code(202).send({ deleting: true });
  });
};
