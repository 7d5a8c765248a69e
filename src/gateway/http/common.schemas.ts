// Shapes shared by several resources.
import { z } from 'zod';
import { StoredString } from './stored.schemas.ts';
import { refusals } from './openapi.ts';

export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const Uuid = z.uuid();
export const Timestamp = z.string().describe('ISO 8601 timestamp');
/** A model slug as stored (workspace defaults, credential allow-lists, preset configs). */
export const ModelSlug = StoredString.min(1).max(256);

/** A preset slug (docs/reference/api.md#presets: URL-safe, at least 1 character): RFC 3986's unreserved characters, up
 * to 100 of them, but not only dots (`.` and `..` are path segments a client would resolve away). */
export const PRESET_SLUG_PATTERN = String.raw`(?!\.+$)[A-Za-z0-9._~-]+`;
export const PresetSlug = z
  .string()
  .min(1)
  .max(100)
  .regex(new RegExp(`^${PRESET_SLUG_PATTERN}$`), 'must be URL-safe: letters, digits and . _ ~ - (not only dots)');

export const Pagination = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

export const ManagementError = z.object({ error: z.object({ code: z.number().int(), message: z.string() }) });
/** The refusals a management route documents, in the management error shape. */
export const managementRefusals = (...codes: number[]) => refusals(ManagementError, ...codes);

export const SERVER_TOOLS = [
  'service:advisor',
  'service:apply_patch',
  'service:bash',
  'service:datetime',
  'service:fusion',
  'service:image_generation',
  'service:experimental__search_models',
  'service:shell',
  'service:subagent',
  'service:tool_search',
  'service:web_fetch',
  'service:web_search',
] as const;
export type ServerTool = (typeof SERVER_TOOLS)[number];

/** One stop condition of the server-tool loop (docs/guides/server-tools.md): the request's
 * `stop_server_tools_when` and a preset's share this shape. */
export const StopCondition = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('step_count_is'), step_count: z.number().int().min(1).max(1000) }).strict(),
    z.object({ type: z.literal('max_cost'), max_cost_in_dollars: z.number().positive() }).strict(),
    z.object({ type: z.literal('max_tokens_used'), max_tokens: z.number().int().min(1) }).strict(),
    z.object({ type: z.literal('has_tool_call'), tool_name: StoredString.min(1).max(256) }).strict(),
    z.object({ type: z.literal('finish_reason_is'), reason: StoredString.min(1).max(64) }).strict(),
  ],
  { error: 'must be a stop condition: step_count_is, max_cost, max_tokens_used, has_tool_call or finish_reason_is' },
);
export type StopCondition = z.infer<typeof StopCondition>;
/** Any one condition ends the loop; at least one, at most 16. */
export const StopConditions = z.array(StopCondition).min(1).max(16);

/** The server-tool calls one request may run: `max_tool_calls`' default and maximum. */
export const MAX_TOOL_CALLS = 30;
export const MaxToolCalls = z.number().int().min(1).max(MAX_TOOL_CALLS);

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID_PATTERN.test(s);
