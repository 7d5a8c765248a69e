// Every route module of the gateway: the API's, registered under /api/v1 in this order, and the operators' at the root.
import type { RouteModule } from './http/app.ts';
import { openapiRoutes } from './openapi.routes.ts';
import { workspaceRoutes } from './management/workspaces.routes.ts';
import { presetRoutes } from './management/presets.routes.ts';
import { byokRoutes } from './management/byok.routes.ts';
import { keyRoutes } from './management/keys.routes.ts';
import { guardrailRoutes } from './management/guardrails.routes.ts';
import { internRoutes } from './interns/interns.routes.ts';
import { internChatRoutes } from './interns/chat.routes.ts';
import { internFileRoutes } from './interns/files.routes.ts';
import { internSessionRoutes } from './interns/sessions.routes.ts';
import { gitCredentialRoutes } from './interns/git-credentials.routes.ts';
import { chatCompletionRoutes } from './inference/chat-completions.routes.ts';
import { messagesRoutes } from './inference/messages.routes.ts';
import { agentRoutes } from './interns/agents.routes.ts';
import { responsesRoutes } from './inference/responses.routes.ts';
import { modelRoutes } from './inference/models.routes.ts';
import { activityRoutes } from './inference/activity.routes.ts';
import { generationRoutes } from './inference/generations.routes.ts';
import { destinationRoutes } from './observability/destinations.routes.ts';
import { opsRoutes } from './ops.routes.ts';
import { consoleRoutes } from './console.ts';

export const routeModules: RouteModule[] = [
  workspaceRoutes,
  presetRoutes,
  byokRoutes,
  keyRoutes,
  guardrailRoutes,
  internRoutes,
  agentRoutes,
  internChatRoutes,
  internFileRoutes,
  internSessionRoutes,
  gitCredentialRoutes,
  chatCompletionRoutes,
  messagesRoutes,
  responsesRoutes,
  modelRoutes,
  activityRoutes,
  generationRoutes,
  destinationRoutes,
  openapiRoutes,
];

/** Outside /api/v1 and without a key: health, readiness, metrics, the index, the web console. */
export const rootModules: RouteModule[] = [opsRoutes, consoleRoutes];
