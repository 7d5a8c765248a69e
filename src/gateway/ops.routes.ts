// Routes for operators and load balancers, outside /api/v1 and without an API key:
//   GET /health   liveness: the process answers HTTP (200 while it runs, 503 once it is closing)
//   GET /ready    readiness: the store answers, and Redis where configured (else 503 with the failed check)
//   GET /metrics  Prometheus text; with COHORT_METRICS_TOKEN set, only for `Authorization: Bearer <token>`
//   GET /         where things are, for a person who opens the address in a browser or curl
// May import: gateway context, errors, node built-ins.
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { RouteModule } from './http/app.ts';
import { defineRoute } from './http/route.ts';
import { missingAuth, invalidKey } from './errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();
const tags = ['operations'];
const Ready = z.object({ status: z.enum(['ready', 'unavailable']), checks: z.record(z.string(), z.unknown()) });
const MetricsHeaders = z.object({
  authorization: z.string().optional().describe('`Bearer <token>` when the gateway has COHORT_METRICS_TOKEN'),
});

export const opsRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/health',
    summary: 'Liveness: the process answers HTTP',
    tags,
    guard: null,
    responses: { 200: { description: 'alive', schema: z.object({ status: z.literal('ok') }) } },
    handler: async () => ({ status: 'ok' }),
  });

  defineRoute(app, ctx, {
    method: 'GET',
    path: '/ready',
    summary: 'Readiness: the store answers, and Redis where configured',
    tags,
    guard: null,
    responses: {
      200: { description: 'ready', schema: Ready },
      503: { description: 'the failed check', schema: Ready },
    },
    handler: async (_req, reply) => {
      const r = await ctx.health.ready();
      return reply.code(r.ready ? 200 : 503).send({ status: r.ready ? 'ready' : 'unavailable', checks: r.checks });
    },
  });

  const token = ctx.config.metricsToken;
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics of this gateway',
    tags,
    guard: null,
    headers: MetricsHeaders,
    responses: {
      200: { description: 'Prometheus text exposition', schema: z.string(), contentType: 'text/plain' },
      401: { description: 'a metrics token is set and was not given' },
    },
    handler: async (_req, reply, { headers }) => {
      if (token) {
        const given = /^Bearer (.+)$/i.exec(headers.authorization ?? '')?.[1];
        // Compared as digests: equal length, constant time.
        if (!given) throw missingAuth();
        if (!timingSafeEqual(digest(given), digest(token))) throw invalidKey();
      }
      return reply.type(ctx.metrics.contentType).send(await ctx.metrics.text());
    },
  });

  const index = {
    name: 'cohort',
    api: '/api/v1',
    openapi: '/api/v1/openapi.json',
    models: '/api/v1/models',
    health: '/health',
    ready: '/ready',
    metrics: '/metrics',
  };
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/',
    summary: 'Where things are',
    tags,
    guard: null,
    responses: { 200: { description: "addresses of the API, its document and the operators' routes" } },
    handler: async () => index,
  });
};
