// Drizzle table for interns, matching migrations/0003_interns.sql (the SQL is the source of truth).
import { integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const INTERN_STATUSES = [
  'queued',
  'provisioning',
  'running',
  'failed',
  'stopped',
  'destroying',
  'destroy_failed',
] as const;
export type InternStatus = (typeof INTERN_STATUSES)[number];
/** Whether a running intern's daemon is up (docs/fleet.md); src/gateway/interns/power.ts decides the moves. */
export const INTERN_POWER = ['awake', 'sleeping', 'asleep', 'waking'] as const;
export type InternPower = (typeof INTERN_POWER)[number];
export type InternProgress = { step_label: string; step_number: number; total_steps: number };

export const interns = pgTable('interns', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id').notNull(),
  creatorUserId: text('creator_user_id').notNull(),
  name: text('name').notNull(),
  description: text('description'),
  instructions: text('instructions'),
  model: text('model'),
  agent: text('agent').notNull().default('cohort'),
  status: text('status').$type<InternStatus>().notNull().default('queued'),
  progress: jsonb('progress').$type<InternProgress | null>(),
  hostname: text('hostname'),
  lastFailureMessage: text('last_failure_message'),
  vaultId: uuid('vault_id'),
  attachedVaultId: uuid('attached_vault_id'),
  sealedSecret: text('sealed_secret'),
  apiKeyId: uuid('api_key_id'),
  creatorKeyId: uuid('creator_key_id'),
  sealedApiKey: text('sealed_api_key'),
  daemonPid: integer('daemon_pid'),
  power: text('power').$type<InternPower>().notNull().default('awake'),
  powerAt: ts('power_at'),
  /** The gateway provisioning or deleting the intern, and until when its lease holds (migrations/0008). */
  leaseOwner: text('lease_owner'),
  leaseUntil: ts('lease_until'),
  idempotencyKey: text('idempotency_key'),
  idempotencyHash: text('idempotency_hash'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
export type InternRow = typeof interns.$inferSelect;

/** migrations/0013_intern_repositories.sql: the repositories an intern was given. */
export const internRepositories = pgTable('intern_repositories', {
  id: uuid('id').primaryKey(),
  internId: uuid('intern_id').notNull(),
  url: text('url').notNull(),
  ref: text('ref').notNull(),
  path: text('path').notNull(),
  baseCommit: text('base_commit').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});
export type InternRepositoryRow = typeof internRepositories.$inferSelect;

/** migrations/0013_intern_repositories.sql: a workspace's credentials for git hosts (sealed). */
export const gitCredentials = pgTable('git_credentials', {
  id: uuid('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  workspaceId: uuid('workspace_id').notNull(),
  name: text('name').notNull(),
  hosts: jsonb('hosts').$type<string[]>().notNull(),
  username: text('username').notNull(),
  sealedToken: text('sealed_token').notNull(),
  label: text('label').notNull(),
  branchPrefix: text('branch_prefix').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});
export type GitCredentialRow = typeof gitCredentials.$inferSelect;

/** migrations/0014_intern_sessions.sql: an intern's chat sessions, as the gateway relayed them. */
export const internSessions = pgTable('intern_sessions', {
  internId: uuid('intern_id').notNull(),
  id: text('id').notNull(),
  title: text('title').notNull(),
  state: text('state').$type<'completed' | 'paused' | 'failed' | 'cancelled'>().notNull(),
  entries: integer('entries').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
export type InternSessionRow = typeof internSessions.$inferSelect;

/** migrations/0014_intern_sessions.sql: one entry of a session's transcript. */
export const internSessionEntries = pgTable('intern_session_entries', {
  internId: uuid('intern_id').notNull(),
  sessionId: text('session_id').notNull(),
  seq: integer('seq').notNull(),
  at: ts('at').notNull(),
  kind: text('kind').notNull(),
  body: jsonb('body').$type<Record<string, unknown>>().notNull(),
});
