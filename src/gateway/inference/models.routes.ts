// GET /models: what the caller's workspace can route to, in OpenRouter's list shape
// (./model-list.ts), `local/scripted` first. Any valid key.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';

const ModelList = z.object({
  data: z.array(
    z.looseObject({
      id: z.string(),
      name: z.string(),
      context_length: z.number().int().nullable(),
      pricing: z.looseObject({ prompt: z.string(), completion: z.string() }),
    }),
  ),
  links: z.object({ next: z.null() }),
  total_count: z.number().int(),
});

export const modelRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/models',
    guard: 'any',
    summary:
      'List the models the key\'s workspace can route to (OpenRouter\'s list shape; pricing in USD per token, "-1" when unknown)',
    tags: ['inference'],
    responses: { 200: { description: 'the models', schema: ModelList }, 401: { description: 'no valid key' } },
    handler: async (req) => {
      const data = await ctx.inference.models(principalOf(req));
      return { data, links: { next: null }, total_count: data.length };
    },
  });
};
