// Every route module of the gateway, registered under /api/v1 in this order.
import type { RouteModule } from '../app.ts';
import { openapiRoutes } from './openapi.ts';
import { workspaceRoutes } from './workspaces.ts';

export const routeModules: RouteModule[] = [workspaceRoutes, openapiRoutes];
