// The preset configuration (docs/reference/api.md#presets): every request parameter that belongs to a configuration,
// with its bound. Field names follow the inference request bodies of @openrouter/sdk, so a body
// can be validated field by field and the same keys are stored in a preset version's `config`.
import { z } from 'zod';
import { MaxToolCalls, ModelSlug, StopConditions } from '../http/common.schemas.ts';
import { StoredString, storedJson } from '../http/stored.schemas.ts';

const Effort = z.enum(['low', 'medium', 'high', 'xhigh', 'max']);
const Patterns = z.array(StoredString.min(1).max(1024)).max(1024);
const Loose = storedJson(z.looseObject({}));

export const CacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).strict();

export const FallbackModel = z.object({ model: ModelSlug }).strict();

export const OutputConfig = z
  .object({
    effort: Effort.nullable().optional(),
    format: z
      .object({ type: z.literal('json_schema'), schema: storedJson(z.record(z.string(), z.unknown())) })
      .strict()
      .nullable()
      .optional(),
    task_budget: storedJson(z.looseObject({ type: z.string(), total: z.number().int().min(1) }))
      .nullable()
      .optional(),
  })
  .strict();

const ROUTER_PLUGIN_IDS = ['auto-router', 'auto-beta-router'] as const;
const OTHER_PLUGIN_IDS = [
  'context-compression',
  'file-parser',
  'fusion',
  'moderation',
  'pareto-router',
  'response-healing',
  'switchyard-router',
  'web',
  'web-fetch',
] as const;

/** The router plugins' settings are checked strictly; other plugins keep their own settings as given. */
export const Plugin = z.discriminatedUnion('id', [
  z
    .object({
      id: z.enum(ROUTER_PLUGIN_IDS),
      allowed_models: Patterns.optional(),
      excluded_models: Patterns.optional(),
      cost_tier: Effort.optional(),
      cost_quality_tradeoff: z.number().min(0).max(10).optional(),
      enabled: z.boolean().optional(),
      pin_model: z.boolean().optional(),
    })
    .strict(),
  storedJson(z.looseObject({ id: z.enum(OTHER_PLUGIN_IDS), enabled: z.boolean().optional() })),
]);

const ProviderSlugs = z.array(StoredString.min(1).max(128)).max(128).nullable().optional();
const Price = z.union([z.number().min(0), z.string().regex(/^\d+(\.\d+)?$/)], {
  error: 'must be a non-negative number or decimal string',
});
const Percentiles = z
  .union([z.number().min(0), storedJson(z.looseObject({}))], {
    error: 'must be a non-negative number or an object of percentiles',
  })
  .nullable()
  .optional();

export const ProviderPreferences = z
  .object({
    allow_fallbacks: z.boolean().nullable().optional(),
    data_collection: z.enum(['allow', 'deny']).nullable().optional(),
    enforce_distillable_text: z.boolean().nullable().optional(),
    ignore: ProviderSlugs,
    only: ProviderSlugs,
    order: ProviderSlugs,
    max_price: z
      .object({ prompt: Price, completion: Price, image: Price, audio: Price, request: Price })
      .partial()
      .strict()
      .optional(),
    preferred_max_latency: Percentiles,
    preferred_min_throughput: Percentiles,
    quantizations: z.array(StoredString.min(1).max(32)).max(32).nullable().optional(),
    require_parameters: z.boolean().nullable().optional(),
    sort: z
      .union(
        [
          z.enum(['price', 'throughput', 'latency', 'exacto']),
          z
            .object({
              by: z.enum(['price', 'throughput', 'latency', 'exacto']).nullable().optional(),
              partition: z.enum(['model', 'none']).nullable().optional(),
            })
            .strict(),
        ],
        { error: 'must be price, throughput, latency, exacto or an object {by, partition}' },
      )
      .nullable()
      .optional(),
    zdr: z.boolean().nullable().optional(),
  })
  .strict();

const MetaKey = z.string().min(1).max(128);
const MetaValue = z.union([z.string().max(2048), z.number(), z.boolean(), z.null()], {
  error: 'must be a string (at most 2048 characters), number, boolean or null',
});
/** Observability metadata: known keys have special handling, other keys pass through to broadcast destinations. */
export const Trace = storedJson(z.record(MetaKey, MetaValue)).refine(
  (t) => Object.keys(t).length <= 64,
  'at most 64 keys',
);
export const Metadata = storedJson(z.record(MetaKey, z.string().max(2048).nullable())).refine(
  (t) => Object.keys(t).length <= 64,
  'at most 64 keys',
);

/** `route` is the deprecated alias of the provider sort partition. */
export const ROUTE_PARTITION = { fallback: 'model', sort: 'none' } as const;

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
  cache_control: CacheControl,
  output_config: OutputConfig,
  reasoning: Loose,
  thinking: Loose,
  response_format: Loose,
  text: Loose,
  plugins: z.array(Plugin).max(16),
  provider: ProviderPreferences,
  route: z.enum(['fallback', 'sort']),
  session_id: StoredString.min(1).max(256),
  speed: z.enum(['fast', 'standard']),
  stop_server_tools_when: StopConditions,
  max_tool_calls: MaxToolCalls,
  trace: Trace,
  metadata: Metadata,
  user: StoredString.max(256),
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
