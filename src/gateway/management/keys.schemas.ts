// API key shapes, as @openrouter/sdk's apiKeys operations have them (docs/reference/api.md, "Keys").
import { z } from 'zod';
import { Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { RESETS } from '../access/periods.ts';

/** The largest spending limit a key or guardrail takes: a bound against typos, not a price. */
export const MAX_LIMIT_USD = 1_000_000;
export const LimitUsd = z.number().min(0).max(MAX_LIMIT_USD);
export const LimitReset = z.enum(RESETS);

export const CreateKey = z
  .object({
    name: StoredString.min(1).max(255),
    limit: LimitUsd.nullable().optional(),
    limit_reset: LimitReset.nullable().optional(),
    include_byok_in_limit: z.boolean().optional(),
    expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
    workspace_id: Uuid.optional(),
    creator_user_id: StoredString.min(1).max(256).nullable().optional(),
    external: z.unknown().optional(),
  })
  .strict();
export type CreateKey = z.infer<typeof CreateKey>;

export const UpdateKey = z
  .object({
    name: StoredString.min(1).max(255),
    disabled: z.boolean(),
    limit: LimitUsd.nullable(),
    limit_reset: LimitReset.nullable(),
    include_byok_in_limit: z.boolean(),
  })
  .partial()
  .strict();
export type UpdateKey = z.infer<typeof UpdateKey>;

export const ListKeysQuery = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  include_disabled: z.enum(['true', 'false']).default('false'),
  workspace_id: Uuid.optional(),
});

export const HashParam = z.object({ hash: z.string().describe('the key hash (SHA-256 hex of the key)') });

const usage = {
  usage: z.number(),
  usage_daily: z.number(),
  usage_weekly: z.number(),
  usage_monthly: z.number(),
  byok_usage: z.number(),
  byok_usage_daily: z.number(),
  byok_usage_weekly: z.number(),
  byok_usage_monthly: z.number(),
};

export const Key = z.object({
  hash: z.string(),
  name: z.string(),
  label: z.string(),
  disabled: z.boolean(),
  limit: z.number().nullable(),
  limit_remaining: z.number().nullable(),
  limit_reset: LimitReset.nullable(),
  include_byok_in_limit: z.boolean(),
  ...usage,
  created_at: Timestamp,
  updated_at: Timestamp.nullable(),
  expires_at: Timestamp.nullable(),
  creator_user_id: z.string().nullable(),
  external_user: z.string().nullable(),
  workspace_id: z.string(),
});
export type Key = z.infer<typeof Key>;

export const CurrentKey = z.object({
  label: z.string(),
  limit: z.number().nullable(),
  limit_remaining: z.number().nullable(),
  limit_reset: LimitReset.nullable(),
  include_byok_in_limit: z.boolean(),
  ...usage,
  is_free_tier: z.boolean(),
  is_management_key: z.boolean(),
  is_provisioning_key: z.boolean(),
  creator_user_id: z.string().nullable(),
  expires_at: Timestamp.nullable(),
  organization_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  allowed_data_regions: z.array(z.string()),
  rate_limit: z.object({ requests: z.number(), interval: z.string(), note: z.string() }),
  free_model_daily_requests: z.object({ limit: z.number(), remaining: z.number(), used: z.number() }),
});
