// Workspace management routes (docs/reference/api.md#workspaces: create, list, get, update, delete).
// Management key required.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { CreateWorkspace, UpdateWorkspace, Workspace } from './workspaces.schemas.ts';
import { managementRefusals, Pagination } from '../http/common.schemas.ts';
import {
  createWorkspace,
  deleteWorkspace,
  findWorkspace,
  listWorkspaces,
  toWorkspace,
  updateWorkspace,
} from './workspaces.ts';

const One = z.object({ data: Workspace });
const IdParam = z.object({ id: z.string().describe('workspace UUID or slug') });
const common = { tags: ['workspaces'], guard: 'management' as const };

export const workspaceRoutes: RouteModule = (app, ctx) => {
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/workspaces',
    summary: 'Create a workspace',
    body: CreateWorkspace,
    onSend,
    responses: { 201: { description: 'created', schema: One }, ...managementRefusals(400, 401, 403, 500) },
    handler: async (req, reply, { body }) => {
      const p = principalOf(req);
      const row = await createWorkspace(db, { orgId: p.orgId, userId: p.userId, body });
      return reply.code(201).send({ data: toWorkspace(row) });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/workspaces',
    summary: 'List workspaces',
    query: Pagination,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(Workspace), total_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => {
      const { rows, total } = await listWorkspaces(db, { orgId: principalOf(req).orgId, ...query });
      return { data: rows.map(toWorkspace), total_count: total };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/workspaces/:id',
    summary: 'Get a workspace',
    params: IdParam,
    responses: { 200: { description: 'workspace', schema: One }, ...managementRefusals(401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: toWorkspace(await findWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: params.id })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'PATCH',
    path: '/workspaces/:id',
    summary: 'Update a workspace',
    params: IdParam,
    body: UpdateWorkspace,
    onSend,
    responses: { 200: { description: 'updated', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, body }) => {
      const row = await updateWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: params.id, body });
      // Whether the workspace broadcasts is cached with its destinations: a change here applies to
      // this gateway's next request (others see it within COHORT_ROUTING_CACHE_MS).
      if (body.is_observability_broadcast_enabled !== undefined) ctx.broadcast.invalidate(row.id);
      // Both decide the guardrail and budgets cached key resolutions carry.
      if (body.default_guardrail_id !== undefined || body.include_byok_in_budgets !== undefined)
        await ctx.auth
          .invalidate()
          .catch((err: Error) =>
            req.log.warn(
              { err },
              'could not announce a workspace change; other gateways see it within their key cache TTL',
            ),
          );
      return { data: toWorkspace(row) };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/workspaces/:id',
    summary:
      'Delete a workspace with its presets and credentials, revoking the keys bound to it (409 while it holds interns)',
    params: IdParam,
    onSend,
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(401, 403, 404, 409, 500),
    },
    handler: async (req, _reply, { params }) => {
      const id = await deleteWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: params.id });
      // Keys resolved to it would otherwise keep writing to it until their cache entry expires. The
      // delete is done either way; a lost announcement leaves other gateways to their cache TTL.
      await ctx.auth
        .dropWorkspace(id)
        .catch((err: Error) =>
          req.log.warn(
            { err },
            'could not announce a deleted workspace; other gateways see it within their key cache TTL',
          ),
        );
      return { deleted: true };
    },
  });
};
