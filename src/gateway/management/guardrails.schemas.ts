// Guardrail shapes, as @openrouter/sdk's guardrails operations have them (docs/reference/api.md,
// "Guardrails"). Fields of the SDK's shape that cohort does not enforce are refused when set
// (guardrails.ts), never stored and ignored.
import { z } from 'zod';
import { ModelSlug, Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { LimitReset, LimitUsd } from './keys.schemas.ts';

const names = (item: z.ZodString) => z.array(item).max(1000).nullable();
const ProviderSlug = StoredString.min(1).max(64);

/** Settings of the SDK's guardrail that cohort does not enforce yet: refused unless null, false or empty. */
export const NOT_BUILT = [
  'allowed_data_regions',
  'content_filters',
  'content_filter_builtins',
  'enable_free_model_publication',
  'enable_free_model_training',
  'enable_paid_model_training',
  'enforce_zdr_anthropic',
  'enforce_zdr_google',
  'enforce_zdr_openai',
  'enforce_zdr_other',
  'enforce_zdr_xai',
] as const;

const fields = {
  name: StoredString.min(1).max(200),
  description: StoredString.max(1000).nullable(),
  limit_usd: LimitUsd.nullable(),
  reset_interval: LimitReset.nullable(),
  include_byok_in_budgets: z.boolean(),
  allowed_models: names(ModelSlug),
  ignored_models: names(ModelSlug),
  allowed_providers: names(ProviderSlug),
  ignored_providers: names(ProviderSlug),
  enforce_zdr: z.boolean().nullable(),
  ...Object.fromEntries(NOT_BUILT.map((f) => [f, z.unknown()])),
};

export const CreateGuardrail = z
  .object({ ...fields, workspace_id: Uuid })
  .partial()
  .required({ name: true })
  .strict();
export type CreateGuardrail = z.infer<typeof CreateGuardrail>;
export const UpdateGuardrail = z.object(fields).partial().strict();
export type UpdateGuardrail = z.infer<typeof UpdateGuardrail>;

export const Guardrail = z.object({
  id: Uuid,
  name: z.string(),
  description: z.string().nullable(),
  limit_usd: z.number().nullable(),
  reset_interval: LimitReset.nullable(),
  include_byok_in_budgets: z.boolean(),
  allowed_models: z.array(z.string()).nullable(),
  ignored_models: z.array(z.string()).nullable(),
  allowed_providers: z.array(z.string()).nullable(),
  ignored_providers: z.array(z.string()).nullable(),
  enforce_zdr: z.boolean(),
  workspace_id: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp.nullable(),
});
export type Guardrail = z.infer<typeof Guardrail>;

export const KeyHashes = z.object({ key_hashes: z.array(z.string().min(1).max(128)).min(1).max(1000) }).strict();
export const MemberIds = z.object({ member_user_ids: z.array(StoredString.min(1).max(256)).min(1).max(1000) }).strict();

export const KeyAssignment = z.object({
  id: Uuid,
  guardrail_id: Uuid,
  key_hash: z.string(),
  key_label: z.string(),
  key_name: z.string(),
  assigned_by: z.string().nullable(),
  created_at: Timestamp,
});
export const MemberAssignment = z.object({
  id: Uuid,
  guardrail_id: Uuid,
  organization_id: z.string(),
  user_id: z.string(),
  assigned_by: z.string().nullable(),
  created_at: Timestamp,
});
