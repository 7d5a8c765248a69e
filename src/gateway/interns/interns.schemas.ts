// Intern lifecycle shapes, as the official SDK models them (docs/guides/interns.md).
import { z } from 'zod';
import { Repositories } from './repositories.schemas.ts';
import { PRESET_SLUG_PATTERN, Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { INTERN_STATUSES } from '../store/schema-interns.ts';

/** Whatever a model request's `model` may name for the intern's agent to call: `provider/model`,
 * where the model id may have segments of its own (`inferact-vllm/meta-llama/Llama-3.1-8B`) and a
 * `:variant`, or `@preset/<slug>`. */
export const InternModel = z
  .string()
  .min(3)
  .max(256)
  .regex(
    new RegExp(String.raw`^(?:[A-Za-z0-9][\w.-]*(?:\/[\w.+-]+)+(?::[\w.-]+)?|@preset\/${PRESET_SLUG_PATTERN})$`),
    'must be provider/model (e.g. openai/gpt-4o) or @preset/<slug>',
  );

const fields = {
  name: StoredString.trim().min(1).max(100),
  description: StoredString.max(2000).nullable(),
  instructions: StoredString.max(32_000).nullable(),
  model: InternModel.nullable(),
  /** An id of the operator's agent catalogue (GET /agents). */
  agent: z.string().min(1).max(64),
};

export const CreateIntern = z.strictObject({
  name: fields.name,
  description: fields.description.optional(),
  instructions: fields.instructions.optional(),
  model: fields.model.optional(),
  agent: fields.agent.optional(),
  workspace_id: Uuid.optional(),
  vault_id: Uuid.optional(),
  provision: z.boolean().optional(),
  repositories: Repositories.optional().describe(
    'git repositories cloned by the gateway into the work folder before the first start (docs/guides/repositories.md)',
  ),
});
export type CreateIntern = z.infer<typeof CreateIntern>;

export const UpdateIntern = z.strictObject(fields).partial();
export type UpdateIntern = z.infer<typeof UpdateIntern>;

export const InternStatus = z.enum(INTERN_STATUSES);

export const ListInternsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  // The SDK sends `status=a,b`; other clients repeat the parameter (`status=a&status=b`).
  status: z
    .union([z.string(), z.array(z.string()).max(8)])
    .transform((v) => [
      ...new Set(
        [v]
          .flat()
          .flatMap((s) => s.split(','))
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(InternStatus).min(1).max(8))
    .optional(),
  starting_after: z.string().min(1).max(512).optional(),
  workspace_id: Uuid.optional(),
});
export type ListInternsQuery = z.infer<typeof ListInternsQuery>;

export const IdempotencyKey = StoredString.min(1).max(255);

export const Intern = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  instructions: z.string().nullable(),
  model: z.string().nullable(),
  effective_model: z
    .string()
    .describe(
      "cohort's extension: the model its requests run on now: its own model, else its workspace's default_text_model, else local/scripted",
    ),
  agent: z.string(),
  status: InternStatus,
  progress: z
    .object({ step_label: z.string(), step_number: z.number().int(), total_steps: z.number().int() })
    .nullable(),
  hostname: z.string().nullable(),
  last_failure_message: z.string().nullable(),
  workspace_id: z.string(),
  vault_id: z.string().nullable(),
  attached_vault_id: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Intern = z.infer<typeof Intern>;

export const InternList = z.object({
  data: z.array(Intern),
  has_more: z.boolean(),
  next_cursor: z.string().optional(),
});

export const LifecycleError = z.object({
  error: z.object({
    code: z.number().int(),
    message: z.string(),
    metadata: z.object({ reason: z.string(), retryable: z.boolean() }).optional(),
  }),
});
