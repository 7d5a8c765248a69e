// Provider credential (BYOK) routes (docs/reference/api.md#provider-credentials: create, list, get, update,
// delete). Management key required. Responses carry the masked `label`, never the key.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals } from '../http/common.schemas.ts';
import { ByokCredential, ByokId, CreateByok, ListByokQuery, UpdateByok } from './byok.schemas.ts';
import {
  createCredential,
  deleteCredential,
  findCredential,
  listCredentials,
  toCredential,
  updateCredential,
} from './byok.ts';

const One = z.object({ data: ByokCredential });
const common = { tags: ['byok'], guard: 'management' as const };

export const byokRoutes: RouteModule = (app, ctx) => {
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/byok',
    summary: 'Create a provider credential',
    body: CreateByok,
    onSend,
    responses: { 201: { description: 'created', schema: One }, ...managementRefusals(400, 401, 403, 500) },
    handler: async (req, reply, { body }) => {
      const row = await createCredential(db, ctx.sealer, { orgId: principalOf(req).orgId, body });
      return reply.code(201).send({ data: toCredential(row) });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/byok',
    summary: "List provider credentials of a workspace (the account's default unless workspace_id is given)",
    query: ListByokQuery,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(ByokCredential), total_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query: q }) => {
      const { rows, total } = await listCredentials(db, {
        orgId: principalOf(req).orgId,
        workspaceId: q.workspace_id,
        provider: q.provider,
        offset: q.offset,
        limit: q.limit,
      });
      return { data: rows.map(toCredential), total_count: total };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/byok/:id',
    summary: 'Get a provider credential',
    params: ByokId,
    responses: { 200: { description: 'credential', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: toCredential(await findCredential(db, { orgId: principalOf(req).orgId, id: params.id })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'PATCH',
    path: '/byok/:id',
    summary: 'Update a provider credential (a new `key` replaces the sealed one)',
    params: ByokId,
    body: UpdateByok,
    onSend,
    responses: { 200: { description: 'updated', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, body }) => ({
      data: toCredential(
        await updateCredential(db, ctx.sealer, { orgId: principalOf(req).orgId, id: params.id, body }),
      ),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/byok/:id',
    summary: 'Delete a provider credential',
    params: ByokId,
    onSend,
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => {
      await deleteCredential(db, { orgId: principalOf(req).orgId, id: params.id });
      return { deleted: true };
    },
  });
};
