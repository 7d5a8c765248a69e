// A workspace's credentials for git hosts (git-credentials.ts), for management keys: create,
// list, delete. Responses carry the masked `label`, never the token.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals, Uuid } from '../http/common.schemas.ts';
import { CreateGitCredential, GitCredential } from './git-credentials.schemas.ts';
import { createGitCredential, deleteGitCredential, listGitCredentials, toGitCredential } from './git-credentials.ts';

const common = { tags: ['git credentials'], guard: 'management' as const };

export const gitCredentialRoutes: RouteModule = (app, ctx) => {
  const db = ctx.store.db;

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/git-credentials',
    summary: "Create a credential for git hosts in a workspace (the account's default unless workspace_id is given)",
    body: CreateGitCredential,
    responses: {
      201: { description: 'created', schema: z.object({ data: GitCredential }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, reply, { body }) => {
      const row = await createGitCredential(db, ctx.sealer, { orgId: principalOf(req).orgId, body });
      return reply.code(201).send({ data: toGitCredential(row) });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/git-credentials',
    summary: 'List the git credentials of a workspace',
    query: z.strictObject({ workspace_id: Uuid.optional() }),
    responses: {
      200: { description: 'list', schema: z.object({ data: z.array(GitCredential) }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => ({
      data: (await listGitCredentials(db, { orgId: principalOf(req).orgId, workspaceId: query.workspace_id })).map(
        toGitCredential,
      ),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/git-credentials/:id',
    summary: 'Delete a git credential',
    params: z.object({ id: z.string().max(64).describe('git credential id') }),
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => {
      await deleteGitCredential(db, { orgId: principalOf(req).orgId, id: params.id });
      return { deleted: true as const };
    },
  });
};
