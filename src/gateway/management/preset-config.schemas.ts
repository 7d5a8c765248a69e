// The preset configuration (docs/reference/api.md#presets): every request parameter that belongs to a configuration,
// with its bound. Field names follow the inference request bodies of @openrouter/sdk, so a body
// can be validated field by field and the same keys are stored in a preset version's `config`.
import { z } from 'zod';
import { MaxToolCalls, ModelSlug, StopConditions } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { CacheControl, requestOptions, ResponsesText } from '../http/request-options.schemas.ts';

export { CacheControl } from '../http/request-options.schemas.ts';

export const FallbackModel = z.object({ model: ModelSlug }).strict();

export const configFields = {
  model: ModelSlug,
  models: z.array(ModelSlug).min(1).max(3),
  fallbacks: z.array(FallbackModel).max(3),
  max_tokens: z.number().int().min(1),
  temperature: z.number().min(0).max(2),
  top_p: z.number().min(0).max(1),
  top_k: z.number().int().min(0),
  min_p: z.number().min(0).max(1),
  top_a: z.number().min(0).max(1),
  frequency_penalty: z.number().min(-2).max(2),
  presence_penalty: z.number().min(-2).max(2),
  repetition_penalty: z.number().gt(0).max(2),
  seed: z.number().int(),
  stop: z.array(StoredString.min(1).max(256)).max(16),
  ...requestOptions,
  text: ResponsesText,
  stop_server_tools_when: StopConditions,
  max_tool_calls: MaxToolCalls,
};

export type ConfigKey = keyof typeof configFields;
export const CONFIG_KEYS = Object.keys(configFields) as ConfigKey[];

/** A stored configuration: only keys that were set (a null in a body means "not set"); a cache
 * breakpoint given on a system text block is kept as `system_cache_control`. */
export const PresetConfig = z
  .object({ ...configFields, system_cache_control: CacheControl })
  .partial()
  .refine((c) => !(c.fallbacks && c.models), { message: 'cannot be combined with models', path: ['fallbacks'] });
export type PresetConfig = z.infer<typeof PresetConfig>;
