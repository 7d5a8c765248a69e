// Workspace management routes (SPEC §4.2, §4.3, plus list, get and delete). Management key required.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, guard, principalOf } from '../http/app.ts';
import { parseWith } from '../http/validate.ts';
import { CreateWorkspace, UpdateWorkspace, Workspace } from './workspaces.schemas.ts';
import { ManagementError, Pagination } from '../http/common.schemas.ts';
import { createWorkspace, deleteWorkspace, findWorkspace, listWorkspaces, toWorkspace, updateWorkspace } from './workspaces.ts';

const One = z.object({ data: Workspace });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, { description: 'error', schema: ManagementError }]));
const idParam = { id: 'workspace UUID or slug' };

export const workspaceRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'management');
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  ctx.docs.add({ method: 'post', path: '/workspaces', summary: 'Create a workspace', tags: ['workspaces'], body: CreateWorkspace, responses: { 201: { description: 'created', schema: One }, ...errors(400, 401, 403, 500) } });
  app.post('/workspaces', { onRequest, onSend }, async (req, reply) => {
    const p = principalOf(req);
    const row = await createWorkspace(db, { orgId: p.orgId, userId: p.userId, body: parseWith(CreateWorkspace, req.body) });
    return reply.code(201).send({ data: toWorkspace(row) });
  });

  ctx.docs.add({ method: 'get', path: '/workspaces', summary: 'List workspaces', tags: ['workspaces'], responses: { 200: { description: 'page', schema: z.object({ data: z.array(Workspace), total_count: z.number().int() }) }, ...errors(400, 401, 403, 500) } });
  app.get('/workspaces', { onRequest }, async (req) => {
    const page = parseWith(Pagination, req.query);
    const { rows, total } = await listWorkspaces(db, { orgId: principalOf(req).orgId, ...page });
    return { data: rows.map(toWorkspace), total_count: total };
  });

  ctx.docs.add({ method: 'get', path: '/workspaces/:id', summary: 'Get a workspace', tags: ['workspaces'], params: idParam, responses: { 200: { description: 'workspace', schema: One }, ...errors(401, 403, 404, 500) } });
  app.get<{ Params: { id: string } }>('/workspaces/:id', { onRequest }, async (req) => {
    return { data: toWorkspace(await findWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: req.params.id })) };
  });

  ctx.docs.add({ method: 'patch', path: '/workspaces/:id', summary: 'Update a workspace', tags: ['workspaces'], params: idParam, body: UpdateWorkspace, responses: { 200: { description: 'updated', schema: One }, ...errors(400, 401, 403, 404, 500) } });
  app.patch<{ Params: { id: string } }>('/workspaces/:id', { onRequest, onSend }, async (req) => {
    const body = parseWith(UpdateWorkspace, req.body);
    return { data: toWorkspace(await updateWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: req.params.id, body })) };
  });

  ctx.docs.add({ method: 'delete', path: '/workspaces/:id', summary: 'Delete a workspace with its presets and credentials, revoking the keys bound to it (409 while it holds interns)', tags: ['workspaces'], params: idParam, responses: { 200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) }, ...errors(401, 403, 404, 409, 500) } });
  app.delete<{ Params: { id: string } }>('/workspaces/:id', { onRequest, onSend }, async (req) => {
    const id = await deleteWorkspace(db, { orgId: principalOf(req).orgId, idOrSlug: req.params.id });
    // Keys resolved to it would otherwise keep writing to it until their cache entry expires. The
    // delete is done either way; a lost announcement leaves other gateways to their cache TTL.
    await ctx.auth.dropWorkspace(id).catch((err: Error) => req.log.warn({ err }, 'could not announce a deleted workspace; other gateways see it within their key cache TTL'));
    return { deleted: true };
  });
};
