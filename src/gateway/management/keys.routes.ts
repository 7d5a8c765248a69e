// API key routes (docs/guides/keys-and-budgets.md): /keys with a management key, /key with any key.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals } from '../http/common.schemas.ts';
import { CreateKey, CurrentKey, HashParam, Key, ListKeysQuery, UpdateKey } from './keys.schemas.ts';
import { createKey, currentKey, deleteKey, getKey, type KeyDeps, listKeys, updateKey } from './keys.ts';

const One = z.object({ data: Key });
const common = { tags: ['keys'], guard: 'management' as const };

export const keyRoutes: RouteModule = (app, ctx) => {
  const deps: KeyDeps = {
    db: ctx.store.db,
    now: Date.now,
    // The change is made; a lost announcement leaves other gateways to their key cache TTL.
    announce: (hash) =>
      ctx.auth
        .invalidate(hash)
        .catch((err: Error) =>
          ctx.log.warn({ err }, 'could not announce a key change; other gateways see it within their key cache TTL'),
        ),
  };

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/keys',
    summary: "List the account's API keys (100 a page)",
    query: ListKeysQuery,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(Key) }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => ({
      data: await listKeys(deps, {
        orgId: principalOf(req).orgId,
        offset: query.offset,
        includeDisabled: query.include_disabled === 'true',
        workspaceId: query.workspace_id,
      }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/keys',
    summary: 'Create an API key (its secret is in this answer only)',
    body: CreateKey,
    responses: {
      201: { description: 'created', schema: z.object({ data: Key, key: z.string() }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, reply, { body }) =>
      reply.code(201).send(await createKey(deps, { principal: principalOf(req), body })),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/keys/:hash',
    summary: 'Get an API key',
    params: HashParam,
    responses: { 200: { description: 'key', schema: One }, ...managementRefusals(401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: await getKey(deps, { orgId: principalOf(req).orgId, hash: params.hash }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'PATCH',
    path: '/keys/:hash',
    summary: 'Update an API key (name, disabled, limit)',
    params: HashParam,
    body: UpdateKey,
    responses: { 200: { description: 'updated', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, body }) => ({
      data: await updateKey(deps, { orgId: principalOf(req).orgId, hash: params.hash, body }),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/keys/:hash',
    summary: 'Delete (revoke) an API key',
    params: HashParam,
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => {
      await deleteKey(deps, { orgId: principalOf(req).orgId, hash: params.hash });
      return { deleted: true as const };
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    path: '/key',
    tags: ['keys'],
    guard: 'any',
    summary: 'The calling key: its label, limit, usage and what remains',
    responses: { 200: { description: 'key', schema: z.object({ data: CurrentKey }) }, ...managementRefusals(401, 500) },
    handler: async (req) => ({ data: await currentKey(deps, principalOf(req)) }),
  });
};
