// Drizzle table for migrations/0002_inference.sql (and 0009, 0011): the inference request log.
// Drizzle table for migrations/0002_inference.sql (and 0009, 0010): the inference request log.
import { boolean, doublePrecision, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const inferenceRequests = pgTable('inference_requests', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id'),
  apiKeyId: uuid('api_key_id'),
  userId: text('user_id'),
  apiStyle: text('api_style').$type<'chat' | 'messages' | 'responses'>().notNull(),
  requestedModel: text('requested_model'),
  model: text('model'),
  provider: text('provider'),
  credentialId: uuid('credential_id'),
  isByok: boolean('is_byok').notNull().default(false),
  streamed: boolean('streamed').notNull(),
  attempts: integer('attempts').notNull().default(0),
  status: integer('status').notNull(),
  finishReason: text('finish_reason'),
  error: text('error'),
  latencyMs: integer('latency_ms').notNull(),
  promptTokens: integer('prompt_tokens'),
  completionTokens: integer('completion_tokens'),
  totalTokens: integer('total_tokens'),
  cachedTokens: integer('cached_tokens'),
  cost: doublePrecision('cost'),
  requestBody: jsonb('request_body'),
  responseBody: jsonb('response_body'),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  /** A server-tool loop's rows (migrations/0009): the response's id, and the row's step in it. */
  generationId: text('generation_id'),
  step: integer('step'),
  /** The key whose spending limit pays (migrations/0012): the caller's, or an intern's creator key. */
  chargedKeyId: uuid('charged_key_id'),
  /** The guardrail the request ran under (migrations/0012), whose spend it adds to. */
  guardrailId: uuid('guardrail_id'),
  /** What the request said about itself (migrations/0011): its session, end user and metadata. */
  sessionId: text('session_id'),
  externalUser: text('external_user'),
  metadata: jsonb('metadata').$type<Record<string, string>>(),
  /** How the endpoint was chosen (migrations/0010): `sort=price; session=sticky`. */
  routing: text('routing'),
});
export type InferenceRequestRow = typeof inferenceRequests.$inferInsert;

/** A workspace's broadcast destination (migrations/0011): where its spans are exported. */
export const broadcastDestinations = pgTable('broadcast_destinations', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id').notNull(),
  name: text('name'),
  kind: text('kind').$type<'otlp'>().notNull(),
  endpoint: text('endpoint').notNull(),
  protocol: text('protocol').$type<'http/json' | 'http/protobuf'>().notNull(),
  headersSealed: text('headers_sealed'),
  headerLabels: jsonb('header_labels').$type<Record<string, string>>().notNull().default({}),
  disabled: boolean('disabled').notNull().default(false),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
export type BroadcastDestinationRow = typeof broadcastDestinations.$inferSelect;
