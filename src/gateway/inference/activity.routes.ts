// GET /activity: the request log per UTC day and model (OpenRouter's activity shape), for the
// account of the management key; filtered to one day or one workspace, or split per workspace.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals, Uuid } from '../http/common.schemas.ts';
import { activity } from './activity.ts';

const Query = z.strictObject({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD')
    .refine((d) => !Number.isNaN(Date.parse(d)), 'must be a real date')
    .optional()
    .describe('one UTC day of the last 30 (YYYY-MM-DD)'),
  workspace_id: Uuid.optional().describe("only this workspace's requests"),
  group_by: z
    .literal('workspace')
    .optional()
    .describe('`workspace`: one row per workspace as well, with its `workspace_id`'),
});

const Item = z.object({
  date: z.string(),
  model: z.string(),
  model_permaslug: z.string(),
  endpoint_id: z.string(),
  provider_name: z.string(),
  usage: z.number(),
  byok_usage_inference: z.number(),
  requests: z.number().int(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  reasoning_tokens: z.number().int(),
  workspace_id: z.string().optional(),
});

export const activityRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/activity',
    summary: 'Requests, tokens and cost per UTC day and model, today and the 30 days before (management key)',
    tags: ['inference'],
    guard: 'management',
    query: Query,
    responses: {
      200: { description: 'the summary, oldest day first', schema: z.object({ data: z.array(Item) }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => {
      // This gateway's own queued rows first; other gateways' reach the store within a second.
      await ctx.inference.flush();
      const data = await activity(ctx.store.db, {
        orgId: principalOf(req).orgId,
        date: query.date,
        workspaceId: query.workspace_id,
        byWorkspace: query.group_by === 'workspace',
      });
      return { data };
    },
  });
};
