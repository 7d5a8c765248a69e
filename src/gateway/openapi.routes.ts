// GET /openapi.json: the document generated from the route definitions (no key needed).
import { z } from 'zod';
import type { RouteModule } from './http/app.ts';
import { defineRoute } from './http/route.ts';

export const openapiRoutes: RouteModule = (app, ctx) => {
  let cached: Record<string, unknown> | undefined;
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/openapi.json',
    summary: 'This document',
    tags: ['operations'],
    guard: null,
    responses: { 200: { description: 'the OpenAPI 3.1 document', schema: z.record(z.string(), z.unknown()) } },
    handler: async () => (cached ??= ctx.docs.document()),
  });
};
