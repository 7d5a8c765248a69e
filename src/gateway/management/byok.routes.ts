// Provider credential (BYOK) routes (SPEC §4.5, plus list, get, update and delete). Management
// key required. Responses carry the masked `label`, never the key.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, guard, principalOf } from '../http/app.ts';
import { parseWith } from '../http/validate.ts';
import { ManagementError } from '../http/common.schemas.ts';
import { ByokCredential, ByokId, CreateByok, ListByokQuery, UpdateByok } from './byok.schemas.ts';
import { createCredential, deleteCredential, findCredential, listCredentials, toCredential, updateCredential } from './byok.ts';

const One = z.object({ data: ByokCredential });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, { description: 'error', schema: ManagementError }]));
const idParam = { id: 'credential UUID' };

export const byokRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'management');
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  ctx.docs.add({ method: 'post', path: '/byok', summary: 'Create a provider credential', tags: ['byok'], body: CreateByok, responses: { 201: { description: 'created', schema: One }, ...errors(400, 401, 403, 500) } });
  app.post('/byok', { onRequest, onSend }, async (req, reply) => {
    const p = principalOf(req);
    const row = await createCredential(db, ctx.sealer, { orgId: p.orgId, body: parseWith(CreateByok, req.body) });
    return reply.code(201).send({ data: toCredential(row) });
  });

  ctx.docs.add({ method: 'get', path: '/byok', summary: "List provider credentials of a workspace (the account's default unless workspace_id is given)", tags: ['byok'], responses: { 200: { description: 'page', schema: z.object({ data: z.array(ByokCredential), total_count: z.number().int() }) }, ...errors(400, 401, 403, 500) } });
  app.get('/byok', { onRequest }, async (req) => {
    const q = parseWith(ListByokQuery, req.query);
    const { rows, total } = await listCredentials(db, { orgId: principalOf(req).orgId, workspaceId: q.workspace_id, provider: q.provider, offset: q.offset, limit: q.limit });
    return { data: rows.map(toCredential), total_count: total };
  });

  ctx.docs.add({ method: 'get', path: '/byok/:id', summary: 'Get a provider credential', tags: ['byok'], params: idParam, responses: { 200: { description: 'credential', schema: One }, ...errors(400, 401, 403, 404, 500) } });
  app.get<{ Params: { id: string } }>('/byok/:id', { onRequest }, async (req) => {
    const { id } = parseWith(ByokId, req.params);
    return { data: toCredential(await findCredential(db, { orgId: principalOf(req).orgId, id })) };
  });

  ctx.docs.add({ method: 'patch', path: '/byok/:id', summary: 'Update a provider credential (a new `key` replaces the sealed one)', tags: ['byok'], params: idParam, body: UpdateByok, responses: { 200: { description: 'updated', schema: One }, ...errors(400, 401, 403, 404, 500) } });
  app.patch<{ Params: { id: string } }>('/byok/:id', { onRequest, onSend }, async (req) => {
    const { id } = parseWith(ByokId, req.params);
    const body = parseWith(UpdateByok, req.body);
    return { data: toCredential(await updateCredential(db, ctx.sealer, { orgId: principalOf(req).orgId, id, body })) };
  });

  ctx.docs.add({ method: 'delete', path: '/byok/:id', summary: 'Delete a provider credential', tags: ['byok'], params: idParam, responses: { 200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) }, ...errors(400, 401, 403, 404, 500) } });
  app.delete<{ Params: { id: string } }>('/byok/:id', { onRequest, onSend }, async (req) => {
    const { id } = parseWith(ByokId, req.params);
    await deleteCredential(db, { orgId: principalOf(req).orgId, id });
    return { deleted: true };
  });
};
