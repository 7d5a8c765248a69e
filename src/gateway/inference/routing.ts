// From a validated request body (and the preset it names) to what the router will do: the models
// to try in order, the body to send upstream, the request's ZDR requirement and the server tools
// it names. Pure; the preset's designated version is looked up by the caller.
import { invalidRequest } from '../errors.ts';
import { SERVER_TOOLS } from '../http/common.schemas.ts';
import type { ChatRequest } from './types.ts';
import type { PresetVersion } from './routing-config.ts';

export const PRESET_PREFIX = '@preset/';
export const MAX_FALLBACKS = 3;

/** Fields that steer routing or observability; never sent upstream. */
const ROUTING_FIELDS = new Set([
  'model',
  'preset',
  'models',
  'fallbacks',
  'provider',
  'plugins',
  'session_id',
  'route',
  'speed',
  'trace',
  'metadata',
  'stop_server_tools_when',
  'max_tool_calls',
  'output_config',
  'thinking',
  'system_cache_control',
  'stream',
  'stream_options',
]);

type ReasoningOption = {
  effort?: string | null;
  max_tokens?: number | null;
  enabled?: boolean | null;
  exclude?: boolean | null;
};
type Options = {
  reasoning?: ReasoningOption | null;
  thinking?: { type: 'enabled'; budget_tokens: number } | { type: 'disabled' } | { type: 'adaptive' } | null;
  output_config?: { effort?: string | null; format?: { type: 'json_schema'; schema: unknown } | null } | null;
  response_format?: unknown;
};

/** The reasoning and structured-output options in the router's one vocabulary, which each provider
 * adapter writes in its own dialect: `reasoning` ({effort, max_tokens, enabled, exclude}) from
 * itself, Anthropic's `thinking` and `output_config.effort`; `response_format` from itself or
 * `output_config.format`. Pure. */
export function normalizeOptions(body: Options): { reasoning?: ReasoningOption; response_format?: unknown } {
  const out: { reasoning?: ReasoningOption; response_format?: unknown } = {};
  const r: ReasoningOption = {};
  for (const [k, v] of Object.entries(body.reasoning ?? {}))
    if (v !== null && v !== undefined) (r as never)[k] = v as never;
  if (body.thinking?.type === 'enabled') {
    r.max_tokens ??= body.thinking.budget_tokens;
    r.enabled ??= true;
  } else if (body.thinking?.type === 'adaptive') r.enabled ??= true;
  else if (body.thinking?.type === 'disabled') r.enabled ??= false;
  const effort = body.output_config?.effort;
  if (effort && r.effort === undefined) r.effort = effort === 'max' ? 'xhigh' : effort;
  if (Object.keys(r).length) out.reasoning = r;
  if (body.response_format) out.response_format = body.response_format;
  else if (body.output_config?.format)
    out.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: body.output_config.format.schema, strict: true },
    };
  return out;
}

/** Options sent on to the provider adapter, where null means "not set". */
const NULLABLE_OPTIONS = ['cache_control', 'reasoning', 'response_format', 'user'];

/** Plugin ids that are server tools under another name. */
const PLUGIN_TOOLS: Record<string, string> = {
  web: 'service:web_search',
  'web-fetch': 'service:web_fetch',
  fusion: 'service:fusion',
};
const SERVER_TOOL_SET: ReadonlySet<string> = new Set(SERVER_TOOLS);

export type RequestBody = ChatRequest & {
  model?: string;
  preset?: string;
  models?: string[];
  fallbacks?: { model: string }[];
  provider?: { zdr?: boolean | null } | null;
  plugins?: ({ id: string; enabled?: boolean } & Record<string, unknown>)[] | null;
  reasoning?: unknown;
  thinking?: unknown;
  output_config?: unknown;
};

/** The preset a body names, by `@preset/<slug>` as its model or by its `preset` field. */
export function presetSlugOf(body: Pick<RequestBody, 'model' | 'preset'>): string | null {
  if (!body.model?.startsWith(PRESET_PREFIX)) return body.preset ?? null;
  // Without a slug the request would fall through to the workspace default, not the preset meant.
  if (body.model.length === PRESET_PREFIX.length)
    throw invalidRequest(`model: ${PRESET_PREFIX} needs a preset slug after it`);
  return body.model.slice(PRESET_PREFIX.length);
}

/** `models` and `fallbacks` spell one setting: a request giving either replaces the preset's. */
const FALLBACK_FIELDS = ['models', 'fallbacks'];

/** The preset's config under the body: request fields win; its system prompt leads unless the body has its own. */
export function applyPreset(body: RequestBody, preset: PresetVersion | null): RequestBody {
  if (!preset) return body;
  const own = Object.fromEntries(
    Object.entries(body).filter(([k, v]) => v !== undefined && !(k === 'model' && String(v).startsWith(PRESET_PREFIX))),
  );
  const ownsFallbacks = FALLBACK_FIELDS.some((k) => k in own);
  const config = ownsFallbacks
    ? Object.fromEntries(Object.entries(preset.config).filter(([k]) => !FALLBACK_FIELDS.includes(k)))
    : preset.config;
  const merged = { ...config, ...own } as RequestBody;
  const hasSystem = body.messages.some((m) => m.role === 'system' || m.role === 'developer');
  // A breakpoint the preset's system block carried stays on it.
  const mark = preset.config.system_cache_control;
  if (preset.systemPrompt && !hasSystem)
    merged.messages = [
      {
        role: 'system',
        content: mark ? [{ type: 'text', text: preset.systemPrompt, cache_control: mark }] : preset.systemPrompt,
      },
      ...body.messages,
    ];
  return merged;
}

export type Resolved = { models: string[]; upstream: ChatRequest; requireZdr: boolean; serverTools: string[] };

export function resolveRequest(body: RequestBody, opts: { defaultModel: string | null }): Resolved {
  const model = body.model && !body.model.startsWith(PRESET_PREFIX) ? body.model : opts.defaultModel;
  if (!model) throw invalidRequest('model: required, since the workspace has no default_text_model');
  if (body.models && body.fallbacks) throw invalidRequest('fallbacks: cannot be combined with models');
  // Most requests name no fallbacks, tools or plugins: none of the lists below is built for them.
  const listed = body.models ?? body.fallbacks?.map((f) => f.model);
  const fallbacks = listed?.length ? [...new Set(listed)].filter((m) => m !== model) : [];
  if (fallbacks.length > MAX_FALLBACKS) throw invalidRequest(`models: at most ${MAX_FALLBACKS} fallback models`);

  const serverTools: string[] = [];
  for (const t of body.tools ?? [])
    if (SERVER_TOOL_SET.has(t.type) || t.type.startsWith('service:')) serverTools.push(t.type);
  for (const p of body.plugins ?? []) {
    const id = PLUGIN_TOOLS[p.id] ?? p.id;
    if (p.enabled !== false && SERVER_TOOL_SET.has(id)) serverTools.push(id);
  }
  const upstream = {} as ChatRequest;
  // `__proto__` would set the copy's prototype rather than a field (the HTTP layer refuses it anyway).
  for (const k in body) if (!ROUTING_FIELDS.has(k) && k !== '__proto__') upstream[k] = body[k as keyof RequestBody];
  if (body.reasoning || body.thinking || body.output_config) {
    const o = normalizeOptions(body as Options);
    delete upstream.reasoning;
    Object.assign(upstream, o);
  }
  for (const k of NULLABLE_OPTIONS) if (upstream[k] === null) delete upstream[k];
  if (body.tools) {
    const tools = body.tools.filter((t) => !t.type.startsWith('service:'));
    if (tools.length) upstream.tools = tools;
    else delete upstream.tools;
  }
  return {
    models: [model, ...fallbacks],
    upstream,
    requireZdr: body.provider?.zdr === true,
    serverTools: serverTools.length > 1 ? [...new Set(serverTools)] : serverTools,
  };
}

/** The first named server tool that the workspace disabled, if any. */
export function disabledToolIn(serverTools: string[], disabled: string[] | null | undefined): string | null {
  if (!disabled?.length) return null;
  return serverTools.find((t) => disabled.includes(t)) ?? null;
}
