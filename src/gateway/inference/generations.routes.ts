// GET /generation, /generation/content and /generations: the request log read back
// (generations.ts). Any key; a management key reads its account, another key what it made.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals, Timestamp, Uuid } from '../http/common.schemas.ts';
import { resourceNotFound } from '../errors.ts';
import { contentOf, generationOf, generationRows, listGenerations } from './generations.ts';

const Id = z.strictObject({ id: z.string().min(1).max(128).describe('the `id` a model response carried') });

const Generation = z.looseObject({
  id: z.string(),
  model: z.string(),
  created_at: Timestamp,
  latency: z.number().nullable(),
  tokens_prompt: z.number().int().nullable(),
  tokens_completion: z.number().int().nullable(),
  total_cost: z.number(),
  provider_name: z.string().nullable(),
  session_id: z.string().nullable(),
  status: z.number().int(),
  error: z.string().nullable(),
  metadata: z.record(z.string(), z.string()).nullable(),
});

const Content = z.object({
  input: z.union([z.object({ prompt: z.string() }), z.object({ messages: z.array(z.unknown()) })]),
  output: z.object({ completion: z.string().nullable(), reasoning: z.string().nullable() }),
  error: z
    .object({
      message: z.string().nullable(),
      status: z.number().int().nullable(),
      provider_name: z.string().nullable(),
      raw: z.null(),
      previous_errors: z.array(z.unknown()),
    })
    .nullable(),
});

const time = z.iso.datetime({ offset: true });
const ListQuery = z.strictObject({
  api_key_id: Uuid.optional().describe("only this key's requests"),
  workspace_id: Uuid.optional(),
  model: z.string().min(1).max(256).optional().describe('the model that served it, `provider/model`'),
  session_id: z.string().min(1).max(256).optional(),
  from: time.optional().describe('created at or after (ISO 8601)'),
  to: time.optional().describe('created before (ISO 8601)'),
  before: z.string().min(1).max(128).optional().describe("the previous page's `next_cursor`"),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export const generationRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/generation',
    summary: "A model request's record by the id its response carried (OpenRouter's GenerationResponse)",
    tags: ['inference'],
    guard: 'any',
    query: Id,
    responses: {
      200: { description: 'the record', schema: z.object({ data: Generation }) },
      ...managementRefusals(400, 401, 404),
    },
    handler: async (req, _reply, { query }) => {
      // This gateway's own queued rows first; other gateways' reach the store within a second.
      await ctx.inference.flush();
      const rows = await generationRows(ctx.store.db, principalOf(req), query.id);
      if (!rows.length) throw resourceNotFound(`generation ${query.id}`);
      return { data: generationOf(rows) };
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    path: '/generation/content',
    summary: "A model request's logged request and response (OpenRouter's GenerationContentResponse)",
    tags: ['inference'],
    guard: 'any',
    query: Id,
    responses: {
      200: { description: 'the logged bodies', schema: z.object({ data: Content }) },
      ...managementRefusals(400, 401, 404),
    },
    handler: async (req, _reply, { query }) => {
      await ctx.inference.flush();
      const rows = await generationRows(ctx.store.db, principalOf(req), query.id);
      if (!rows.length) throw resourceNotFound(`generation ${query.id}`);
      const data = contentOf(rows);
      // The workspace's I/O logging did not select it (off, another key, or not sampled).
      if (!data)
        throw resourceNotFound(`content of generation ${query.id}: its bodies were not logged, or are no longer kept`);
      return { data };
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    path: '/generations',
    summary: 'Model requests, newest first, filtered by key, workspace, model, session and time',
    tags: ['inference'],
    guard: 'any',
    query: ListQuery,
    responses: {
      200: {
        description: 'one page of records; `next_cursor` fetches the next',
        schema: z.object({ data: z.array(Generation), next_cursor: z.string().nullable() }),
      },
      ...managementRefusals(400, 401),
    },
    handler: async (req, _reply, { query }) => {
      await ctx.inference.flush();
      const rows = await listGenerations(ctx.store.db, principalOf(req), {
        apiKeyId: query.api_key_id,
        workspaceId: query.workspace_id,
        model: query.model,
        sessionId: query.session_id,
        from: query.from ? new Date(query.from) : undefined,
        to: query.to ? new Date(query.to) : undefined,
        before: query.before,
        limit: query.limit,
      });
      return {
        data: rows.map((r) => generationOf([r])),
        next_cursor: rows.length === query.limit ? rows.at(-1)!.id : null,
      };
    },
  });
};
