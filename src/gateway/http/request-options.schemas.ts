// The request options every model route and the preset route accept (docs/reference/request-options.md):
// provider preferences, speed, the route alias, session_id, caching, reasoning, structured output,
// metadata, user and plugins. One schema per option, so a bad value is the same 400 naming the
// same field on /chat/completions, /messages, /responses and /presets/{slug}/messages. Settings
// that exist in the wider API but that this gateway does not act on are refused by name, so that
// none is accepted and ignored.
import { z } from 'zod';
import { StoredString, storedJson } from './stored.schemas.ts';

/** A value this gateway does not act on: accepted only as absent or null. */
export const notBuilt = (what: string) =>
  z.null({ error: `not built yet: ${what} is not supported by this gateway` }).optional();

export const PROVIDER_SORTS = ['price', 'throughput', 'latency', 'exacto'] as const;
export type ProviderSort = (typeof PROVIDER_SORTS)[number];

const Effort = z.enum(['low', 'medium', 'high', 'xhigh', 'max']);
const Patterns = z.array(StoredString.min(1).max(256)).max(256);

export const CacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).strict();

const JsonSchema = storedJson(z.record(z.string(), z.unknown()));

export const OutputConfig = z
  .object({
    effort: Effort.nullable().optional(),
    format: z
      .object({ type: z.literal('json_schema'), schema: JsonSchema })
      .strict()
      .nullable()
      .optional(),
    task_budget: notBuilt('output_config.task_budget'),
  })
  .strict();

/** OpenRouter's unified reasoning setting. */
export const Reasoning = z
  .object({
    effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullable().optional(),
    max_tokens: z.number().int().min(1).nullable().optional(),
    exclude: z
      .literal(false, { error: 'not built yet: reasoning.exclude true is not supported by this gateway' })
      .nullable()
      .optional(),
    enabled: z.boolean().nullable().optional(),
    // Codex sends it on every request; the reasoning comes back whole, never summarised (known gaps).
    summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional(),
  })
  .strict();

/** Anthropic's extended thinking. */
export const Thinking = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }).strict(),
    z.object({ type: z.literal('disabled') }).strict(),
    // Anthropic's model-chosen budget: reasoning on, at the default effort.
    z.object({ type: z.literal('adaptive') }).strict(),
  ],
  { error: 'must be {type: "enabled", budget_tokens}, {type: "adaptive"} or {type: "disabled"}' },
);

export const ResponseFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }).strict(),
    z.object({ type: z.literal('json_object') }).strict(),
    z
      .object({
        type: z.literal('json_schema'),
        json_schema: z
          .object({
            name: StoredString.min(1).max(64),
            description: StoredString.max(1024).optional(),
            schema: JsonSchema.optional(),
            strict: z.boolean().nullable().optional(),
          })
          .strict(),
      })
      .strict(),
  ],
  { error: 'must be {type: "text"}, {type: "json_object"} or {type: "json_schema", json_schema}' },
);

/** The Responses API's text output setting (its structured output); other keys pass through, as before. */
export const ResponsesText = z.looseObject({
  format: z
    .discriminatedUnion(
      'type',
      [
        z.object({ type: z.literal('text') }).strict(),
        z.object({ type: z.literal('json_object') }).strict(),
        z
          .object({
            type: z.literal('json_schema'),
            name: StoredString.min(1).max(64),
            description: StoredString.max(1024).optional(),
            schema: JsonSchema,
            strict: z.boolean().nullable().optional(),
          })
          .strict(),
      ],
      { error: 'must be {type: "text"}, {type: "json_object"} or {type: "json_schema", name, schema}' },
    )
    .nullable()
    .optional(),
  verbosity: z.enum(['low', 'medium', 'high']).nullable().optional(),
});

/** The router plugin: chooses the model of a request for the auto model id (docs/guides/model-requests.md). */
export const ROUTER_PLUGIN = 'auto-router';
export const RouterPlugin = z
  .object({
    id: z.literal(ROUTER_PLUGIN),
    allowed_models: Patterns.optional(),
    excluded_models: Patterns.optional(),
    cost_tier: Effort.optional(),
    enabled: z.boolean().optional(),
    pin_model: z.boolean().optional(),
    cost_quality_tradeoff: notBuilt('the router plugin setting cost_quality_tradeoff'),
  })
  .strict();
export type RouterPlugin = z.infer<typeof RouterPlugin>;

/** Plugins that are server tools under another name; their settings are checked by the tool. */
export const TOOL_PLUGIN_IDS = ['web', 'web-fetch', 'fusion'] as const;
/** Plugin ids of the wider API this gateway does not run. */
const UNBUILT_PLUGIN_IDS = new Set([
  'auto-beta-router',
  'context-compression',
  'file-parser',
  'moderation',
  'pareto-router',
  'response-healing',
  'switchyard-router',
]);

/** One plugin: the router's settings strictly, a tool plugin's as given (its tool checks them). */
export const Plugin = z.looseObject({ id: StoredString.min(1).max(128) }).superRefine((p, ctx) => {
  if (p.id === ROUTER_PLUGIN) {
    const r = RouterPlugin.safeParse(p);
    for (const issue of r.error?.issues ?? [])
      ctx.addIssue({
        code: 'custom',
        path: issue.code === 'unrecognized_keys' ? [issue.keys[0]!] : issue.path,
        message: issue.code === 'unrecognized_keys' ? 'unknown setting of the auto-router plugin' : issue.message,
      });
    return;
  }
  if ((TOOL_PLUGIN_IDS as readonly string[]).includes(p.id)) {
    if (p.enabled !== undefined && typeof p.enabled !== 'boolean')
      ctx.addIssue({ code: 'custom', path: ['enabled'], message: 'must be a boolean' });
    return;
  }
  ctx.addIssue({
    code: 'custom',
    path: ['id'],
    message: UNBUILT_PLUGIN_IDS.has(p.id)
      ? `not built yet: the ${p.id} plugin is not supported by this gateway`
      : `unknown plugin: one of ${[ROUTER_PLUGIN, ...TOOL_PLUGIN_IDS].join(', ')}`,
  });
});
export const Plugins = z.array(storedJson(Plugin)).max(16);

const ProviderSlugs = z.array(StoredString.min(1).max(128)).max(128).nullable().optional();
/** USD per million tokens. */
const Price = z.union([z.number().min(0), z.string().regex(/^\d+(\.\d+)?$/)], {
  error: 'must be a non-negative number or decimal string (USD per million tokens)',
});
const SortBy = z.enum(PROVIDER_SORTS);

export const ProviderPreferences = z
  .object({
    allow_fallbacks: z.boolean().nullable().optional(),
    ignore: ProviderSlugs,
    only: ProviderSlugs,
    order: ProviderSlugs,
    max_price: z
      .object({
        prompt: Price.optional(),
        completion: Price.optional(),
        image: notBuilt('provider.max_price.image'),
        audio: notBuilt('provider.max_price.audio'),
        request: notBuilt('provider.max_price.request'),
      })
      .strict()
      .nullable()
      .optional(),
    sort: z
      .union(
        [
          SortBy,
          z
            .object({ by: SortBy.nullable().optional(), partition: z.enum(['model', 'none']).nullable().optional() })
            .strict(),
        ],
        { error: 'must be price, throughput, latency, exacto or an object {by, partition}' },
      )
      .nullable()
      .optional(),
    zdr: z.boolean().nullable().optional(),
    data_collection: notBuilt('provider.data_collection'),
    enforce_distillable_text: notBuilt('provider.enforce_distillable_text'),
    preferred_max_latency: notBuilt('provider.preferred_max_latency'),
    preferred_min_throughput: notBuilt('provider.preferred_min_throughput'),
    quantizations: notBuilt('provider.quantizations'),
    require_parameters: notBuilt('provider.require_parameters'),
  })
  .strict();
export type ProviderPreferences = z.infer<typeof ProviderPreferences>;

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

export const SessionId = StoredString.min(1).max(256);

/** The options, each as its own schema (callers add `.nullable().optional()` as their body allows). */
export const requestOptions = {
  cache_control: CacheControl,
  output_config: OutputConfig,
  reasoning: Reasoning,
  thinking: Thinking,
  response_format: ResponseFormat,
  plugins: Plugins,
  provider: ProviderPreferences,
  route: z.enum(['fallback', 'sort']),
  session_id: SessionId,
  speed: z.enum(['fast', 'standard']),
  trace: Trace,
  metadata: Metadata,
  user: StoredString.max(256),
};
