// Routes for operators and load balancers, outside /api/v1 and without an API key:
//   GET /health   liveness: the process answers HTTP (200 while it runs, 503 once it is closing)
//   GET /ready    readiness: the store answers, and Redis where configured (else 503 with the failed check)
//   GET /metrics  Prometheus text; with COHORT_METRICS_TOKEN set, only for `Authorization: Bearer <token>`
//   GET /         where things are, for a person who opens the address in a browser or curl
// May import: gateway context, errors, node built-ins.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RouteModule } from './http/app.ts';
import { missingAuth, invalidKey } from './errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const opsRoutes: RouteModule = (app, ctx) => {
  app.get('/health', async () => ({ status: 'ok' }));

  app.get('/ready', async (_req, reply) => {
    const r = await ctx.health.ready();
    return reply.code(r.ready ? 200 : 503).send({ status: r.ready ? 'ready' : 'unavailable', checks: r.checks });
  });

  const token = ctx.config.metricsToken;
  app.get('/metrics', async (req, reply) => {
    if (token) {
      const given = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      // Compared as digests: equal length, constant time.
      if (!given) throw missingAuth();
      if (!timingSafeEqual(digest(given), digest(token))) throw invalidKey();
    }
    return reply.type(ctx.metrics.contentType).send(await ctx.metrics.text());
  });

  const index = { name: 'cohort', api: '/api/v1', openapi: '/api/v1/openapi.json', models: '/api/v1/models', health: '/health', ready: '/ready', metrics: '/metrics' };
  app.get('/', async () => index);
};
