// Every route module of the gateway: the API's, registered under /api/v1 in this order, and the operators' at the root.
import type { RouteModule } from '../app.ts';
import { openapiRoutes } from './openapi.ts';
import { workspaceRoutes } from './workspaces.ts';
import { presetRoutes } from './presets.ts';
import { byokRoutes } from './byok.ts';
import { internRoutes } from './interns.ts';
import { internChatRoutes } from './interns-chat.ts';
import { chatCompletionRoutes } from './chat-completions.ts';
import { messagesRoutes } from './messages.ts';
import { agentRoutes } from './agents.ts';
import { responsesRoutes } from './responses.ts';
import { modelRoutes } from './models.ts';
import { opsRoutes } from './ops.ts';
import { consoleRoutes } from '../console.ts';

export const routeModules: RouteModule[] = [workspaceRoutes, presetRoutes, byokRoutes, internRoutes, agentRoutes, internChatRoutes, chatCompletionRoutes, messagesRoutes, responsesRoutes, modelRoutes, openapiRoutes];

/** Outside /api/v1 and without a key: health, readiness, metrics, the index, the web console. */
export const rootModules: RouteModule[] = [opsRoutes, consoleRoutes];
