// Drizzle table definitions matching migrations/*.sql (the SQL files are the source of truth
// for the database; these give typed queries over the same columns).
import {
  boolean,
  doublePrecision,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const organizations = pgTable('organizations', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  internsProgramme: boolean('interns_programme').notNull().default(false),
  defaultWorkspaceId: uuid('default_workspace_id'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  internsProgramme: boolean('interns_programme').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const memberships = pgTable(
  'memberships',
  {
    orgId: uuid('org_id').notNull(),
    userId: text('user_id').notNull(),
    role: text('role').notNull().default('member'),
    joinedAt: ts('joined_at').notNull().defaultNow(),
    leftAt: ts('left_at'),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId] })],
);

export const workspaces = pgTable('workspaces', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  name: text('name').notNull(),
  slug: text('slug').notNull(),
  description: text('description'),
  createdBy: text('created_by').notNull(),
  defaultImageModel: text('default_image_model'),
  defaultTextModel: text('default_text_model'),
  defaultProviderSort: text('default_provider_sort'),
  disabledServerTools: jsonb('disabled_server_tools').$type<string[] | null>(),
  includeByokInBudgets: boolean('include_byok_in_budgets').notNull().default(false),
  ioLoggingApiKeyIds: jsonb('io_logging_api_key_ids').$type<string[] | null>(),
  ioLoggingSamplingRate: doublePrecision('io_logging_sampling_rate').notNull().default(1),
  isDataDiscountLoggingEnabled: boolean('is_data_discount_logging_enabled').notNull().default(false),
  isObservabilityBroadcastEnabled: boolean('is_observability_broadcast_enabled').notNull().default(false),
  isObservabilityIoLoggingEnabled: boolean('is_observability_io_logging_enabled').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
  /** migrations/0012: the guardrail of the workspace's keys that have none of their own. */
  defaultGuardrailId: uuid('default_guardrail_id'),
});

export const apiKeys = pgTable('api_keys', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  hash: text('hash').notNull(),
  label: text('label').notNull(),
  name: text('name').notNull(),
  kind: text('kind').$type<'management' | 'standard'>().notNull(),
  actsAs: text('acts_as').$type<'user' | 'organization'>().notNull(),
  creatorUserId: text('creator_user_id').notNull(),
  workspaceId: uuid('workspace_id'),
  granted: boolean('granted').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  revokedAt: ts('revoked_at'),
  /** migrations/0012: managed over the API (docs/guides/keys-and-budgets.md). */
  disabled: boolean('disabled').notNull().default(false),
  expiresAt: ts('expires_at'),
  updatedAt: ts('updated_at'),
  limitUsd: doublePrecision('limit_usd'),
  limitReset: text('limit_reset').$type<'daily' | 'weekly' | 'monthly' | null>(),
  includeByokInLimit: boolean('include_byok_in_limit').notNull().default(false),
});

export const presets = pgTable('presets', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id').notNull(),
  slug: text('slug').notNull(),
  name: text('name').notNull(),
  description: text('description'),
  status: text('status').notNull().default('active'),
  statusUpdatedAt: ts('status_updated_at'),
  creatorUserId: text('creator_user_id').notNull(),
  designatedVersionId: uuid('designated_version_id'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const presetVersions = pgTable('preset_versions', {
  id: uuid('id').primaryKey(),
  presetId: uuid('preset_id').notNull(),
  version: integer('version').notNull(),
  systemPrompt: text('system_prompt').notNull().default(''),
  config: jsonb('config').$type<Record<string, unknown>>().notNull(),
  creatorId: text('creator_id').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const byokCredentials = pgTable('byok_credentials', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id').notNull(),
  name: text('name'),
  provider: text('provider').notNull(),
  label: text('label').notNull(),
  sealedKey: text('sealed_key').notNull(),
  disabled: boolean('disabled').notNull().default(false),
  isByokOnly: boolean('is_byok_only').notNull().default(false),
  isFallback: boolean('is_fallback').notNull().default(false),
  isRequired: boolean('is_required').notNull().default(false),
  declaredZdr: boolean('declared_zdr'),
  sortOrder: integer('sort_order').notNull().default(0),
  allowedApiKeyHashes: jsonb('allowed_api_key_hashes').$type<string[] | null>(),
  allowedModels: jsonb('allowed_models').$type<string[] | null>(),
  allowedUserIds: jsonb('allowed_user_ids').$type<string[] | null>(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
});

/** migrations/0012 (docs/guides/keys-and-budgets.md). */
export const guardrails = pgTable('guardrails', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id'),
  name: text('name').notNull(),
  description: text('description'),
  limitUsd: doublePrecision('limit_usd'),
  resetInterval: text('reset_interval').$type<'daily' | 'weekly' | 'monthly' | null>(),
  includeByokInBudgets: boolean('include_byok_in_budgets').notNull().default(false),
  allowedModels: jsonb('allowed_models').$type<string[] | null>(),
  ignoredModels: jsonb('ignored_models').$type<string[] | null>(),
  allowedProviders: jsonb('allowed_providers').$type<string[] | null>(),
  ignoredProviders: jsonb('ignored_providers').$type<string[] | null>(),
  enforceZdr: boolean('enforce_zdr').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
});

export const guardrailKeyAssignments = pgTable('guardrail_key_assignments', {
  id: uuid('id').primaryKey(),
  keyId: uuid('key_id').notNull(),
  guardrailId: uuid('guardrail_id').notNull(),
  assignedBy: text('assigned_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const guardrailMemberAssignments = pgTable('guardrail_member_assignments', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  userId: text('user_id').notNull(),
  guardrailId: uuid('guardrail_id').notNull(),
  assignedBy: text('assigned_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
});
