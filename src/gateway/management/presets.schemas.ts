// Preset shapes (docs/reference/api.md#presets): the three inference body styles a preset version is created
// from, and the preset and version records. Bodies are loose: fields that are not configuration
// (`messages`, `stream`, `prompt`, `input`, …) and unknown fields are accepted and ignored.
import { z } from 'zod';
import { Timestamp, Uuid } from '../http/common.schemas.ts';
import { CacheControl, configFields, PresetConfig, type ConfigKey } from './preset-config.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';

type NullableFields = { [K in ConfigKey]: z.ZodOptional<z.ZodNullable<(typeof configFields)[K]>> };
const nullable = Object.fromEntries(
  Object.entries(configFields).map(([k, s]) => [k, s.nullable().optional()]),
) as NullableFields;
const { stop: _stop, max_tokens: _maxTokens, ...common } = nullable;

const noFallbacksWithModels = (b: { fallbacks?: unknown; models?: unknown }) => !(b.fallbacks && b.models);
const refinement = { message: 'cannot be combined with models', path: ['fallbacks'] };

const TextBlock = z.looseObject({
  type: z.literal('text'),
  text: StoredString,
  cache_control: CacheControl.optional(),
});

/** Anthropic messages style: `system` (string or text blocks) is the system prompt, `stop_sequences` the stop list. */
export const MessagesPresetBody = z
  .looseObject({
    ...common,
    max_tokens: nullable.max_tokens,
    stop_sequences: nullable.stop,
    system: z
      .union([StoredString, z.array(TextBlock).max(256)], { error: 'must be a string or an array of text blocks' })
      .nullable()
      .optional(),
  })
  .refine(noFallbacksWithModels, refinement);
export type MessagesPresetBody = z.infer<typeof MessagesPresetBody>;

const ChatContent = z.union([StoredString, z.array(z.looseObject({ type: z.literal('text'), text: StoredString }))], {
  error: 'must be a string or an array of text parts',
});
export const SystemMessage = z.looseObject({ role: z.enum(['system', 'developer']), content: ChatContent });
export const isSystemMessage = (m: unknown) =>
  typeof m === 'object' && m !== null && ['system', 'developer'].includes((m as { role?: unknown }).role as string);

/** Only system and developer messages are read (they become the system prompt); other messages are ignored. */
const ChatMessages = z
  .array(z.unknown())
  .max(10_000)
  .superRefine((msgs, ctx) => {
    msgs.forEach((m, i) => {
      if (!isSystemMessage(m)) return;
      const r = SystemMessage.safeParse(m);
      for (const issue of r.error?.issues ?? [])
        ctx.addIssue({ code: 'custom', path: [i, ...issue.path], message: issue.message });
    });
  });

/** OpenAI chat style: system/developer messages are the system prompt; `max_completion_tokens` wins over `max_tokens`. */
export const ChatPresetBody = z
  .looseObject({
    ...common,
    max_tokens: nullable.max_tokens,
    max_completion_tokens: nullable.max_tokens,
    stop: z
      .union([StoredString.min(1).max(256), configFields.stop], {
        error: 'must be a string or an array of at most 16 strings (each 1 to 256 characters)',
      })
      .nullable()
      .optional(),
    messages: ChatMessages.nullable().optional(),
  })
  .refine(noFallbacksWithModels, refinement);
export type ChatPresetBody = z.infer<typeof ChatPresetBody>;

/** OpenAI Responses style: `instructions` is the system prompt, `max_output_tokens` the output cap. */
export const ResponsesPresetBody = z
  .looseObject({ ...common, max_output_tokens: nullable.max_tokens, instructions: StoredString.nullable().optional() })
  .refine(noFallbacksWithModels, refinement);
export type ResponsesPresetBody = z.infer<typeof ResponsesPresetBody>;

export const PresetVersion = z.object({
  id: Uuid,
  preset_id: Uuid,
  version: z.number().int().min(1),
  system_prompt: z.string(),
  config: PresetConfig,
  creator_id: z.string(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type PresetVersion = z.infer<typeof PresetVersion>;

export const Preset = z.object({
  id: Uuid,
  name: z.string(),
  slug: z.string(),
  description: z.string().nullable(),
  status: z.enum(['active', 'disabled', 'archived']),
  status_updated_at: Timestamp.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  creator_user_id: z.string(),
  workspace_id: Uuid,
  designated_version_id: Uuid.nullable(),
});
export type Preset = z.infer<typeof Preset>;

export const PresetWithVersion = Preset.extend({ designated_version: PresetVersion.nullable() });
export type PresetWithVersion = z.infer<typeof PresetWithVersion>;

export const VersionParam = z
  .string()
  .regex(/^[1-9][0-9]{0,8}$/, 'must be a positive integer')
  .transform(Number);
