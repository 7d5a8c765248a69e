// Workspace shapes (docs/reference/api.md#workspaces).
import { z } from 'zod';
import { ModelSlug, SERVER_TOOLS, SLUG_PATTERN, Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { PROVIDER_SORTS } from '../http/request-options.schemas.ts';

const fields = {
  name: StoredString.min(1).max(100),
  slug: z
    .string()
    .min(1)
    .max(50)
    .regex(SLUG_PATTERN, 'must be lowercase letters and digits in hyphen-separated groups'),
  description: StoredString.max(500).nullable(),
  default_image_model: ModelSlug.nullable(),
  default_text_model: ModelSlug.nullable(),
  default_provider_sort: z.enum(PROVIDER_SORTS).nullable(),
  disabled_server_tools: z
    .array(z.enum(SERVER_TOOLS))
    .max(SERVER_TOOLS.length * 4)
    .nullable(),
  default_guardrail_id: Uuid.nullable(),
  include_byok_in_budgets: z.boolean(),
  io_logging_api_key_ids: z.array(StoredString.min(1).max(256)).max(1000).nullable(),
  io_logging_sampling_rate: z.number().min(0.0001).max(1),
  is_data_discount_logging_enabled: z.boolean(),
  is_observability_broadcast_enabled: z.boolean(),
  is_observability_io_logging_enabled: z.boolean(),
};

export const CreateWorkspace = z.object(fields).partial().required({ name: true, slug: true }).strict();
export type CreateWorkspace = z.infer<typeof CreateWorkspace>;

export const UpdateWorkspace = z.object(fields).partial().strict();
export type UpdateWorkspace = z.infer<typeof UpdateWorkspace>;

export const Workspace = z.object({
  id: Uuid,
  name: z.string(),
  slug: z.string(),
  description: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp.nullable(),
  created_by: z.string(),
  default_guardrail_id: Uuid,
  default_image_model: z.string().nullable(),
  default_text_model: z.string().nullable(),
  default_provider_sort: z.enum(PROVIDER_SORTS).nullable(),
  disabled_server_tools: z.array(z.enum(SERVER_TOOLS)).nullable(),
  include_byok_in_budgets: z.boolean(),
  io_logging_api_key_ids: z.array(z.string()).nullable(),
  io_logging_sampling_rate: z.number(),
  is_data_discount_logging_enabled: z.boolean(),
  is_observability_broadcast_enabled: z.boolean(),
  is_observability_io_logging_enabled: z.boolean(),
});
export type Workspace = z.infer<typeof Workspace>;
