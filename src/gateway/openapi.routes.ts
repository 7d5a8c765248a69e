// GET /openapi.json: the document generated from the route schemas (no key needed).
import type { RouteModule } from './http/app.ts';

export const openapiRoutes: RouteModule = (app, ctx) => {
  let cached: Record<string, unknown> | undefined;
  app.get('/openapi.json', async () => (cached ??= ctx.docs.document()));
};
