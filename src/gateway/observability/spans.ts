// What one broadcast span says (docs/guides/observability.md): its name, trace, parent and
// attributes, from a model request's row of the request log, a server-tool step or an intern
// turn, and the request's metadata. Pure.
//
// Attributes follow the OpenTelemetry GenAI semantic conventions (`gen_ai.*`) where one exists,
// `session.id` and `user.id` for the grouping, `metadata.<key>` for the caller's other keys, and
// `cohort.*` for what only this gateway knows (cost, endpoint, status). No key, key id or header
// is ever an attribute.
import { createHash } from 'node:crypto';
import type { Observation } from './observation.ts';

export type Attributes = Record<string, string | number | boolean | string[]>;

export type SpanShape = {
  name: string;
  traceId: string;
  /** The caller's span this one is a child of (metadata.parent_span_id), or null: a root. */
  parentSpanId: string | null;
  startMs: number;
  endMs: number;
  error: string | null;
  attributes: Attributes;
};

/** Metadata keys with a meaning of their own; the rest become `metadata.<key>` attributes. */
const KNOWN = new Set(['trace_id', 'trace_name', 'span_name', 'generation_name', 'parent_span_id']);

const hexId = (value: string, length: 32 | 16): string => {
  const v = value.toLowerCase().replaceAll('-', '');
  if (v.length === length && /^[0-9a-f]+$/.test(v) && !/^0+$/.test(v)) return v;
  // Any other id (a Langfuse trace id, a name) is hashed to one of OTLP's size: the same id always
  // gives the same trace, so spans sent under it still meet.
  return createHash('sha256').update(value).digest('hex').slice(0, length);
};

/** The trace of a generation (its UUIDv7), unless the caller named one. */
export const traceIdOf = (o: { metadata: Record<string, string> | null; fallback: string }) =>
  hexId(o.metadata?.trace_id || o.fallback.replace(/^gen-/, ''), 32);

function common(obs: Observation | null | undefined, fallbackTrace: string) {
  const m = obs?.metadata ?? null;
  const attributes: Attributes = {};
  if (obs?.sessionId) attributes['session.id'] = obs.sessionId;
  if (obs?.user) attributes['user.id'] = obs.user;
  if (m?.trace_name) attributes['cohort.trace_name'] = m.trace_name;
  for (const k in m ?? {}) if (!KNOWN.has(k)) attributes[`metadata.${k}`] = m![k]!;
  return {
    traceId: traceIdOf({ metadata: m, fallback: fallbackTrace }),
    parentSpanId: m?.parent_span_id ? hexId(m.parent_span_id, 16) : null,
    attributes,
    metadata: m,
  };
}

/** The fields of a request-log row a model span reads. */
export type ModelRow = {
  id: string;
  generationId?: string | null;
  step?: number | null;
  workspaceId?: string | null;
  apiStyle: string;
  requestedModel?: string | null;
  model?: string | null;
  provider?: string | null;
  isByok?: boolean;
  streamed: boolean;
  attempts?: number;
  status: number;
  finishReason?: string | null;
  error?: string | null;
  latencyMs: number;
  promptTokens?: number | null;
  completionTokens?: number | null;
  cachedTokens?: number | null;
  cost?: number | null;
  createdAt?: Date;
};

const put = (a: Attributes, k: string, v: string | number | boolean | null | undefined) => {
  if (v !== null && v !== undefined) a[k] = v;
};

/** A model request (or a loop's model turn): a GenAI `chat` span named by `generation_name`. */
export function modelSpan(row: ModelRow, obs: Observation | null | undefined): SpanShape {
  const generation = row.generationId ?? row.id;
  const c = common(obs, generation);
  const model = row.model ?? row.requestedModel ?? 'unknown';
  const a = c.attributes;
  // Every span of every broadcasting request is serialized: an attribute that repeats another, or
  // says nothing in the usual case, is left out (the span's duration is its latency).
  a['gen_ai.operation.name'] = 'chat';
  put(a, 'gen_ai.provider.name', row.provider);
  if (row.requestedModel !== row.model) put(a, 'gen_ai.request.model', row.requestedModel);
  put(a, 'gen_ai.response.model', row.model);
  a['gen_ai.response.id'] = generation;
  if (row.finishReason) a['gen_ai.response.finish_reasons'] = [row.finishReason];
  put(a, 'gen_ai.usage.input_tokens', row.promptTokens);
  put(a, 'gen_ai.usage.output_tokens', row.completionTokens);
  if (row.cachedTokens) a['gen_ai.usage.cached_input_tokens'] = row.cachedTokens;
  put(a, 'cohort.cost_usd', row.cost);
  if (row.provider) a['cohort.endpoint'] = `${row.provider}:${model}`;
  a['cohort.status'] = row.status;
  if (row.isByok) a['cohort.byok'] = true;
  if (row.attempts && row.attempts > 1) a['cohort.attempts'] = row.attempts;
  put(a, 'cohort.step', row.step);
  put(a, 'cohort.workspace_id', row.workspaceId);
  const endMs = (row.createdAt ?? new Date()).getTime();
  return {
    name: c.metadata?.generation_name || `chat ${model}`,
    traceId: c.traceId,
    parentSpanId: c.parentSpanId,
    startMs: endMs - row.latencyMs,
    endMs,
    error: row.status >= 400 ? (row.error ?? `status ${row.status}`) : null,
    attributes: a,
  };
}

/** A server tool's run in a generation's loop: a GenAI `execute_tool` span named by `span_name`. */
export function toolSpan(o: {
  generationId: string;
  tool: string;
  callId: string;
  status: 'completed' | 'failed';
  startMs: number;
  endMs: number;
  observation: Observation | null | undefined;
  workspaceId?: string | null;
}): SpanShape {
  const c = common(o.observation, o.generationId);
  const a = c.attributes;
  a['gen_ai.operation.name'] = 'execute_tool';
  a['gen_ai.tool.name'] = o.tool;
  a['gen_ai.tool.call.id'] = o.callId;
  a['gen_ai.tool.type'] = 'extension';
  a['gen_ai.response.id'] = o.generationId;
  a['cohort.status'] = o.status === 'completed' ? 200 : 500;
  put(a, 'cohort.workspace_id', o.workspaceId);
  return {
    name: c.metadata?.span_name || `execute_tool ${o.tool}`,
    traceId: c.traceId,
    parentSpanId: c.parentSpanId,
    startMs: o.startMs,
    endMs: o.endMs,
    error: o.status === 'failed' ? 'the tool failed' : null,
    attributes: a,
  };
}

/** How an intern's turn ended, as its relay saw it (interns/relay.ts). */
export type TurnEnd = {
  /** The completion id the stream carried. */
  id: string;
  model: string | null;
  sessionId: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; cost?: number } | null;
  /** 200 for a turn that finished or paused for input; else the status its error carried (499: the client left). */
  status: number;
  finishReason: string | null;
  error: string | null;
  startMs: number;
  endMs: number;
};

/** An intern's turn: a GenAI `invoke_agent` span, its trace the session's (a chat request carries no metadata). */
export function turnSpan(o: TurnEnd & { internId: string; internName: string; workspaceId: string }): SpanShape {
  const c = common({ sessionId: o.sessionId, user: null, metadata: null }, o.sessionId ?? o.id);
  const a = c.attributes;
  a['gen_ai.operation.name'] = 'invoke_agent';
  a['gen_ai.agent.id'] = o.internId;
  a['gen_ai.agent.name'] = o.internName;
  a['gen_ai.response.id'] = o.id;
  put(a, 'gen_ai.response.model', o.model);
  if (o.finishReason) a['gen_ai.response.finish_reasons'] = [o.finishReason];
  put(a, 'gen_ai.usage.input_tokens', o.usage?.prompt_tokens);
  put(a, 'gen_ai.usage.output_tokens', o.usage?.completion_tokens);
  put(a, 'cohort.cost_usd', o.usage?.cost);
  a['cohort.status'] = o.status;
  a['cohort.workspace_id'] = o.workspaceId;
  return {
    name: `invoke_agent ${o.internName}`,
    traceId: c.traceId,
    parentSpanId: null,
    startMs: o.startMs,
    endMs: o.endMs,
    error: o.status >= 400 ? (o.error ?? `status ${o.status}`) : null,
    attributes: a,
  };
}
