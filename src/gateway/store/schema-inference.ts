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
  /** How the endpoint was chosen (migrations/0010): `sort=price; session=sticky`. */
  routing: text('routing'),
});
export type InferenceRequestRow = typeof inferenceRequests.$inferInsert;
