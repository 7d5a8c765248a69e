// The one wrapper around @agentclientprotocol/sdk (pinned 2.4.0): nothing else imports the SDK.
// Owns: driving an agent process (client side), serving an agent over stdio (agent side), and
// cohort's ACP extensions (meta.ts). May import: the SDK, node built-ins.
export {
  AgentProcess,
  toAgentCallError,
  type AgentCallError,
  type AgentExit,
  type AgentHandlers,
  type AgentInfo,
  type SpawnAgentOptions,
} from './client.ts';
export { serveStdio } from './serve.ts';
export * from './meta.ts';
export * from './elicitation.ts';
export { agent, methods, RequestError, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
export type {
  AgentApp,
  AgentContext,
  ContentBlock,
  CreateElicitationRequest,
  CreateElicitationResponse,
  ElicitationPropertySchema,
  PermissionOption,
  PermissionOptionKind,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  SessionUpdate,
  StopReason,
  ToolKind,
} from '@agentclientprotocol/sdk';
