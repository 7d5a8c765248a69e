// Broadcast destination routes: where a workspace's spans are sent (docs/guides/observability.md).
// Management key required. Responses show header values masked, never as sent.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { managementRefusals } from '../http/common.schemas.ts';
import {
  BroadcastDestination,
  CreateDestination,
  DestinationId,
  ListDestinationsQuery,
} from './destinations.schemas.ts';
import {
  createDestination,
  deleteDestination,
  findDestination,
  listDestinations,
  toDestination,
} from './destinations.ts';

const One = z.object({ data: BroadcastDestination });
const common = { tags: ['observability'], guard: 'management' as const };

export const destinationRoutes: RouteModule = (app, ctx) => {
  const db = ctx.store.db;

  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/observability/destinations',
    summary: 'Add a broadcast destination (an OTLP/HTTP collector) to a workspace',
    body: CreateDestination,
    responses: { 201: { description: 'created', schema: One }, ...managementRefusals(400, 401, 403, 500) },
    handler: async (req, reply, { body }) => {
      const row = await createDestination(db, ctx.sealer, {
        orgId: principalOf(req).orgId,
        body,
        egress: ctx.config.observability.egress,
      });
      ctx.broadcast.invalidate(row.workspaceId);
      return reply.code(201).send({ data: toDestination(row) });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/observability/destinations',
    summary: "List the account's broadcast destinations (or one workspace's)",
    query: ListDestinationsQuery,
    responses: {
      200: { description: 'the destinations', schema: z.object({ data: z.array(BroadcastDestination) }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => ({
      data: (await listDestinations(db, { orgId: principalOf(req).orgId, workspaceId: query.workspace_id })).map(
        toDestination,
      ),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/observability/destinations/:id',
    summary: 'Get a broadcast destination',
    params: DestinationId,
    responses: { 200: { description: 'destination', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: toDestination(await findDestination(db, { orgId: principalOf(req).orgId, id: params.id })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/observability/destinations/:id',
    summary: 'Delete a broadcast destination',
    params: DestinationId,
    responses: {
      200: { description: 'deleted', schema: z.object({ deleted: z.literal(true) }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => {
      const { workspaceId } = await deleteDestination(db, { orgId: principalOf(req).orgId, id: params.id });
      ctx.broadcast.invalidate(workspaceId);
      return { deleted: true };
    },
  });
};
