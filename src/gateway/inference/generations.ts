// Reading the request log back (docs/guides/observability.md): a generation by the id its response
// carried, its logged bodies, and the account's generations listed and filtered, in the shapes of
// the official @openrouter/sdk generations operations (GenerationResponse, GenerationContentResponse).
// A management key reads its whole account; any other key only the rows it made. A row of another
// account, or another key's for an ordinary key, is not found: its existence is not disclosed.
// A server-tool loop's generation is several rows (`<id>-<step>`, docs/guides/server-tools.md):
// read by the response's id, they are summed into one record.
import { and, desc, eq, gte, lt, or, asc, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Principal } from '../access/identity-store.ts';
import { inferenceRequests as t, type InferenceRequestRow } from '../store/schema-inference.ts';

type Row = typeof t.$inferSelect;
type Reader = Pick<Principal, 'orgId' | 'keyId' | 'kind'>;

/** Rows the reader may see: its account's, and for a key without management rights, its own. */
const visibleTo = (r: Reader): SQL =>
  r.kind === 'management' ? eq(t.orgId, r.orgId) : and(eq(t.orgId, r.orgId), eq(t.apiKeyId, r.keyId))!;

export type Generation = ReturnType<typeof generationOf>;

/** One record in GenerationResponseData's shape, with the fields it lacks (status, error, endpoint, metadata) after it. */
export function generationOf(rows: Row[]) {
  const first = rows[0]!;
  const last = rows.at(-1)!;
  const sum = (k: 'promptTokens' | 'completionTokens' | 'cachedTokens' | 'cost') =>
    rows.some((r) => r[k] !== null) ? rows.reduce((a, r) => a + (r[k] ?? 0), 0) : null;
  const startOf = (r: Row) => r.createdAt.getTime() - r.latencyMs;
  const started = Math.min(...rows.map(startOf));
  const ended = Math.max(...rows.map((r) => r.createdAt.getTime()));
  const latency = rows.length === 1 ? first.latencyMs : ended - started;
  const cost = sum('cost');
  const model = last.model ?? first.model ?? first.requestedModel ?? '';
  const provider = last.provider ?? first.provider;
  return {
    api_type: 'completions' as const,
    app_id: null,
    cache_discount: null,
    cancelled: last.status === 499,
    created_at: new Date(rows.length === 1 ? first.createdAt.getTime() : started).toISOString(),
    data_region: 'global' as const,
    external_user: first.externalUser,
    finish_reason: last.finishReason,
    generation_time: latency,
    http_referer: null,
    id: rows.length === 1 ? first.id : (first.generationId ?? first.id),
    is_byok: rows.some((r) => r.isByok),
    latency,
    model,
    moderation_latency: null,
    native_finish_reason: last.finishReason,
    native_tokens_cached: sum('cachedTokens'),
    native_tokens_completion: sum('completionTokens'),
    native_tokens_completion_images: null,
    native_tokens_prompt: sum('promptTokens'),
    native_tokens_reasoning: null,
    num_fetches: null,
    num_input_audio_prompt: null,
    num_media_completion: null,
    num_media_prompt: null,
    num_search_results: null,
    origin: '',
    preset_id: null,
    provider_name: provider,
    provider_responses: rows
      .filter((r) => r.provider)
      .map((r) => ({
        id: r.id,
        endpoint_id: `${r.provider}:${r.model}`,
        is_byok: r.isByok,
        latency: r.latencyMs,
        model_permaslug: r.model ?? '',
        provider_name: r.provider!,
        status: r.status,
      })),
    request_id: first.generationId ?? first.id,
    router: null,
    service_tier: null,
    session_id: first.sessionId,
    streamed: first.streamed,
    tokens_completion: sum('completionTokens'),
    tokens_prompt: sum('promptTokens'),
    total_cost: cost ?? 0,
    upstream_id: null,
    upstream_inference_cost: null,
    usage: cost ?? 0,
    user_agent: null,
    web_search_engine: null,
    workspace_id: first.workspaceId,
    // Beyond OpenRouter's shape: what this gateway knows of the request.
    status: last.status,
    error: last.error,
    endpoint_id: provider ? `${provider}:${model}` : null,
    api_key_id: first.apiKeyId,
    metadata: first.metadata,
    steps: rows.length,
  };
}

/** The rows of one generation the reader may see, in step order (none: not found). */
export async function generationRows(db: Db, reader: Reader, id: string): Promise<Row[]> {
  const rows = await db
    .select()
    .from(t)
    .where(and(visibleTo(reader), or(eq(t.id, id), eq(t.generationId, id))))
    .orderBy(sql`${t.step} asc nulls first`, asc(t.id));
  const own = rows.find((r) => r.id === id);
  return own ? [own] : rows;
}

type Message = { role: string; content: unknown };
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The input as the content operation gives it: a prompt string, or the conversation's messages. */
export function inputOf(
  style: InferenceRequestRow['apiStyle'],
  body: unknown,
): { prompt: string } | { messages: unknown[] } {
  const b = isObject(body) ? body : {};
  const messages = Array.isArray(b.messages) ? (b.messages as Message[]) : [];
  if (style === 'messages')
    return { messages: b.system !== undefined ? [{ role: 'system', content: b.system }, ...messages] : messages };
  if (style === 'responses') {
    if (typeof b.input === 'string' && b.instructions === undefined) return { prompt: b.input };
    const input =
      typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : Array.isArray(b.input) ? b.input : [];
    return { messages: b.instructions !== undefined ? [{ role: 'system', content: b.instructions }, ...input] : input };
  }
  return { messages };
}

const textOf = (v: unknown): string | null =>
  typeof v === 'string'
    ? v
    : Array.isArray(v)
      ? v.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('')
      : null;

/** The completion and reasoning text of a logged response (a completion, or a collected stream's message). */
export function outputOf(response: unknown): { completion: string | null; reasoning: string | null } {
  if (!isObject(response)) return { completion: null, reasoning: null };
  const choice = Array.isArray(response.choices) ? response.choices[0] : undefined;
  const message = isObject(choice) && isObject(choice.message) ? choice.message : response;
  return { completion: textOf(message.content), reasoning: textOf(message.reasoning) };
}

/** GenerationContentData: the first logged input, the last logged output, the failure if it failed. Null: no body was logged. */
export function contentOf(rows: Row[]) {
  const withInput = rows.find((r) => r.requestBody !== null);
  if (!withInput) return null;
  const withOutput = [...rows].reverse().find((r) => r.responseBody !== null);
  const last = rows.at(-1)!;
  return {
    input: inputOf(withInput.apiStyle, withInput.requestBody),
    output: outputOf(withOutput?.responseBody),
    error:
      last.status === 200
        ? null
        : {
            message: last.error,
            status: last.status,
            provider_name: last.provider,
            raw: null,
            previous_errors: [],
          },
  };
}

export type GenerationFilter = {
  apiKeyId?: string;
  workspaceId?: string;
  model?: string;
  sessionId?: string;
  from?: Date;
  to?: Date;
  /** Rows older than this id (ids are time-ordered: `gen-<UUIDv7>`). */
  before?: string;
  limit: number;
};

/** The reader's rows, newest first, filtered; one row per model request (a loop's steps each). */
export async function listGenerations(db: Db, reader: Reader, f: GenerationFilter): Promise<Row[]> {
  return db
    .select()
    .from(t)
    .where(
      and(
        visibleTo(reader),
        f.apiKeyId ? eq(t.apiKeyId, f.apiKeyId) : undefined,
        f.workspaceId ? eq(t.workspaceId, f.workspaceId) : undefined,
        f.model ? eq(t.model, f.model) : undefined,
        f.sessionId ? eq(t.sessionId, f.sessionId) : undefined,
        f.from ? gte(t.createdAt, f.from) : undefined,
        f.to ? lt(t.createdAt, f.to) : undefined,
        f.before ? lt(t.id, f.before) : undefined,
      ),
    )
    .orderBy(desc(t.id))
    .limit(f.limit);
}
