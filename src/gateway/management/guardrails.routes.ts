// Guardrail routes (docs/guides/keys-and-budgets.md): CRUD and assignments to keys and members,
// as @openrouter/sdk's guardrails operations have them. Management key required.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals, Pagination } from '../http/common.schemas.ts';
import {
  CreateGuardrail,
  Guardrail,
  KeyAssignment,
  KeyHashes,
  MemberAssignment,
  MemberIds,
  UpdateGuardrail,
} from './guardrails.schemas.ts';
import {
  assignKeys,
  assignMembers,
  createGuardrail,
  deleteGuardrail,
  findGuardrail,
  type GuardrailDeps,
  keyAssignments,
  listGuardrails,
  memberAssignments,
  toGuardrail,
  unassignKeys,
  unassignMembers,
  updateGuardrail,
} from './guardrails.ts';

const One = z.object({ data: Guardrail });
const IdParam = z.object({ id: z.string().describe('guardrail UUID') });
const common = { tags: ['guardrails'], guard: 'management' as const };

export const guardrailRoutes: RouteModule = (app, ctx) => {
  const deps: GuardrailDeps = {
    db: ctx.store.db,
    now: Date.now,
    // Which keys a guardrail reaches is a join of assignments: every cached key resolution goes.
    announce: () =>
      ctx.auth
        .invalidate()
        .catch((err: Error) =>
          ctx.log.warn(
            { err },
            'could not announce a guardrail change; other gateways see it within their key cache TTL',
          ),
        ),
  };
  const org = (req: Parameters<typeof principalOf>[0]) => principalOf(req).orgId;

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails',
    summary: "List the account's guardrails",
    query: Pagination,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(Guardrail), total_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => {
      const { rows, total } = await listGuardrails(ctx.store.db, { orgId: org(req), ...query });
      return { data: rows.map(toGuardrail), total_count: total };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/guardrails',
    summary: 'Create a guardrail',
    body: CreateGuardrail,
    responses: { 201: { description: 'created', schema: One }, ...managementRefusals(400, 401, 403, 500) },
    handler: async (req, reply, { body }) =>
      reply.code(201).send({ data: toGuardrail(await createGuardrail(deps, { orgId: org(req), body })) }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails/:id',
    summary: 'Get a guardrail',
    params: IdParam,
    responses: { 200: { description: 'guardrail', schema: One }, ...managementRefusals(401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: toGuardrail(await findGuardrail(ctx.store.db, { orgId: org(req), id: params.id })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'PATCH',
    path: '/guardrails/:id',
    summary: 'Update a guardrail',
    params: IdParam,
    body: UpdateGuardrail,
    responses: { 200: { description: 'updated', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, body }) => ({
      data: toGuardrail(await updateGuardrail(deps, { orgId: org(req), id: params.id, body })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/guardrails/:id',
    summary: 'Delete a guardrail, its assignments, and its place as any workspace default',
    params: IdParam,
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => {
      await deleteGuardrail(deps, { orgId: org(req), id: params.id });
      return { deleted: true as const };
    },
  });

  const listed = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), total_count: z.number().int() });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails/assignments/keys',
    summary: "Every key assignment of the account's guardrails",
    query: Pagination,
    responses: {
      200: { description: 'page', schema: listed(KeyAssignment) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => keyAssignments(ctx.store.db, { orgId: org(req), ...query }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails/assignments/members',
    summary: "Every member assignment of the account's guardrails",
    query: Pagination,
    responses: {
      200: { description: 'page', schema: listed(MemberAssignment) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => memberAssignments(ctx.store.db, { orgId: org(req), ...query }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails/:id/assignments/keys',
    summary: "The guardrail's key assignments",
    params: IdParam,
    query: Pagination,
    responses: {
      200: { description: 'page', schema: listed(KeyAssignment) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, query }) =>
      keyAssignments(ctx.store.db, { orgId: org(req), id: params.id, ...query }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/guardrails/:id/assignments/keys',
    summary: 'Assign keys to the guardrail (a key assigned elsewhere moves here)',
    params: IdParam,
    body: KeyHashes,
    responses: {
      200: { description: 'assigned', schema: z.object({ assigned_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, body }) => ({
      assigned_count: await assignKeys(deps, {
        orgId: org(req),
        id: params.id,
        hashes: body.key_hashes,
        by: principalOf(req).userId,
      }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/guardrails/:id/assignments/keys/remove',
    summary: 'Unassign keys from the guardrail',
    params: IdParam,
    body: KeyHashes,
    responses: {
      200: { description: 'unassigned', schema: z.object({ unassigned_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, body }) => ({
      unassigned_count: await unassignKeys(deps, { orgId: org(req), id: params.id, hashes: body.key_hashes }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/guardrails/:id/assignments/members',
    summary: "The guardrail's member assignments",
    params: IdParam,
    query: Pagination,
    responses: {
      200: { description: 'page', schema: listed(MemberAssignment) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, query }) =>
      memberAssignments(ctx.store.db, { orgId: org(req), id: params.id, ...query }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/guardrails/:id/assignments/members',
    summary:
      'Assign members to the guardrail (their keys without one of their own; a member assigned elsewhere moves here)',
    params: IdParam,
    body: MemberIds,
    responses: {
      200: { description: 'assigned', schema: z.object({ assigned_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, body }) => ({
      assigned_count: await assignMembers(deps, {
        orgId: org(req),
        id: params.id,
        userIds: body.member_user_ids,
        by: principalOf(req).userId,
      }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/guardrails/:id/assignments/members/remove',
    summary: 'Unassign members from the guardrail',
    params: IdParam,
    body: MemberIds,
    responses: {
      200: { description: 'unassigned', schema: z.object({ unassigned_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, body }) => ({
      unassigned_count: await unassignMembers(deps, { orgId: org(req), id: params.id, userIds: body.member_user_ids }),
    }),
  });
};
