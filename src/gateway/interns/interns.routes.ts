// Intern lifecycle routes: create, list, get, update, provision, suspend, delete. Shapes and
// success codes as the official SDK models them. Refusals render `metadata` where they have a reason.
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { refusals } from '../http/openapi.ts';
import type { Ctx } from '../context.ts';
import { invalidRequest } from '../errors.ts';
import {
  CreateIntern,
  IdempotencyKey,
  Intern,
  InternList,
  LifecycleError,
  ListInternsQuery,
  UpdateIntern,
} from './interns.schemas.ts';
import { createIntern, findIntern, internWithModel, listInterns, updateIntern } from './interns.ts';

const errors = (...codes: number[]) => refusals(LifecycleError, ...codes);
const Id = z.object({ id: z.string().describe('intern id') });
const CreateHeaders = z.object({
  'idempotency-key': IdempotencyKey.optional().describe('retries with the same key return the same intern'),
});
const common = { tags: ['interns'], guard: 'interns' as const, errorStyle: 'chat' as const };
/** Provision, suspend and delete take no body: one carrying any field is refused, not ignored. */
const NoBody = z.strictObject({}).optional();
/** The SDK sends this flag; the local provisioner keeps no workspace archive, so there is nothing to acknowledge. */
const DeleteBody = z.strictObject({ acknowledge_workspace_loss: z.boolean().optional() }).optional();
/** Many clients send `Content-Type: application/json` on every request: with an empty body it
 * means no body, not a malformed one, on the routes that take none. */
const emptyIsNone = (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
  const length = req.headers['content-length'];
  if (length === '0' || (length === undefined && req.headers['transfer-encoding'] === undefined))
    delete req.headers['content-type'];
  done();
};

/** `agent` must name an entry of the operator's catalogue. */
function knownAgent<T extends { agent?: string }>(ctx: Ctx, body: T): T {
  if (body.agent === undefined || ctx.agents.get(body.agent)) return body;
  const missing = ctx.agents.missing.find((m) => m.id === body.agent);
  if (missing)
    throw invalidRequest(
      `agent: "${missing.id}" (${missing.name}) is not installed on this installation; its operator adds it with \`${missing.install}\``,
    );
  throw invalidRequest(`agent: unknown agent "${body.agent}"; this installation offers ${ctx.agents.ids().join(', ')}`);
}

export const internRoutes: RouteModule = (app, ctx) => {
  const db = ctx.store.db;
  const shown = (row: Parameters<typeof internWithModel>[1]) => internWithModel(db, row);

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/interns',
    summary: 'Create an intern (Idempotency-Key header makes retries return the same intern)',
    headers: CreateHeaders,
    body: CreateIntern,
    responses: { 201: { description: 'created', schema: Intern }, ...errors(400, 401, 403, 404, 409, 413, 500) },
    handler: async (req, reply, { headers, body }) => {
      knownAgent(ctx, body);
      const idempotencyKey = headers['idempotency-key'];
      // Cloned before the intern is made: a repository that cannot be cloned makes nothing.
      const repos = body.repositories?.length
        ? await ctx.files.cloneRepositories(body.repositories, 'repositories', {
            orgId: principalOf(req).orgId,
            workspaceId: body.workspace_id?.toLowerCase() ?? principalOf(req).workspaceId,
          })
        : null;
      try {
        const { row, replayed } = await createIntern(db, {
          principal: principalOf(req),
          sealer: ctx.sealer,
          body,
          idempotencyKey,
          maxPerAccount: ctx.config.maxInternsPerAccount,
        });
        // Placed in its disk before its first start, where no daemon runs.
        if (repos && !replayed)
          await ctx.files.place(row, repos, {
            account: row.orgId,
            signal: new AbortController().signal,
            created: true,
          });
        if (body.provision && !replayed) await ctx.interns.provision(row);
        const fresh = await findIntern(db, { principal: principalOf(req), id: row.id });
        return reply.code(201).send(await shown(fresh));
      } finally {
        repos?.release();
      }
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/interns',
    summary: 'List interns, newest first',
    query: ListInternsQuery,
    responses: { 200: { description: 'page', schema: InternList }, ...errors(400, 401, 403, 404, 500) },
    handler: (req, _reply, { query }) => listInterns(db, { principal: principalOf(req), query }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/interns/:id',
    summary: 'Get an intern',
    params: Id,
    responses: { 200: { description: 'intern', schema: Intern }, ...errors(401, 403, 404, 500) },
    handler: async (req, _reply, { params }) =>
      shown(await findIntern(db, { principal: principalOf(req), id: params.id })),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'PATCH',
    path: '/interns/:id',
    summary: 'Update an intern (model and instructions reach its agent at the next provision)',
    params: Id,
    body: UpdateIntern,
    responses: { 200: { description: 'updated', schema: Intern }, ...errors(400, 401, 403, 404, 409, 500) },
    handler: async (req, _reply, { params, body }) =>
      shown(await updateIntern(db, { principal: principalOf(req), id: params.id, body: knownAgent(ctx, body) })),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/interns/:id/provision',
    summary: "Start (or restart) the intern's daemon",
    params: Id,
    body: NoBody,
    onRequest: [emptyIsNone],
    responses: {
      202: { description: 'accepted', schema: z.object({ provisioning: z.literal(true) }) },
      ...errors(401, 403, 404, 409, 500),
    },
    handler: async (req, reply, { params }) => {
      await ctx.interns.provision(await findIntern(db, { principal: principalOf(req), id: params.id }));
      return reply.code(202).send({ provisioning: true });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/interns/:id/suspend',
    summary: "Stop the intern's daemon",
    params: Id,
    body: NoBody,
    onRequest: [emptyIsNone],
    responses: {
      200: { description: 'suspended', schema: z.object({ suspended: z.literal(true) }) },
      ...errors(401, 403, 404, 409, 500),
    },
    handler: async (req, _reply, { params }) => {
      await ctx.interns.suspend(await findIntern(db, { principal: principalOf(req), id: params.id }));
      return { suspended: true };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/interns/:id',
    summary: 'Delete an intern: tears down its daemon and directory',
    params: Id,
    body: DeleteBody,
    onRequest: [emptyIsNone],
    responses: {
      202: { description: 'accepted', schema: z.object({ deleting: z.literal(true) }) },
      ...errors(401, 403, 404, 500),
    },
    handler: async (req, reply, { params }) => {
      await ctx.interns.destroy(await findIntern(db, { principal: principalOf(req), id: params.id }));
      return reply.code(202).send({ deleting: true });
    },
  });
};
