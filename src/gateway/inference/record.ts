// What the request log keeps of one request (rowOf), and the relay of a provider's stream to the
// client: each chunk gets the request's id and model slug, usage gets cost (a stream that brought
// none ends with a usage chunk of its own), and when the stream ends (finished, failed or
// abandoned) the request is recorded once.
import type { InferenceRequestRow } from '../store/schema-inference.ts';
import type { Cancel, ChatChunk, FinishReason, ToolCall, Usage } from './types.ts';
import { upstreamFailure, type Served } from './attempts.ts';
import { clientClosed } from '../errors.ts';
import { UpstreamError, WIRE_TAIL } from './types.ts';
import type { Prepared } from './prepare.ts';

export type Outcome = {
  status: number;
  attempts?: number;
  served?: Served;
  usage?: Usage | null;
  finish?: FinishReason | null;
  error?: string;
  response?: unknown;
};

type Recordable = Pick<
  Prepared,
  'id' | 'started' | 'style' | 'stream' | 'principal' | 'requestedModel' | 'loggedBody' | 'observation'
> &
  Partial<Pick<Prepared, 'routing'>>;

export function rowOf(p: Recordable, o: Outcome): InferenceRequestRow {
  const u = o.usage ?? null;
  return {
    id: p.id,
    orgId: p.principal.orgId,
    workspaceId: p.principal.workspaceId,
    apiKeyId: p.principal.keyId,
    chargedKeyId: p.principal.chargedKeyId,
    guardrailId: p.principal.guardrail?.id ?? null,
    userId: p.principal.userId,
    apiStyle: p.style,
    requestedModel: p.requestedModel,
    model: o.served?.model ?? null,
    provider: o.served?.provider ?? null,
    credentialId: o.served?.credentialId ?? null,
    isByok: o.served?.isByok ?? false,
    streamed: p.stream,
    attempts: o.served?.attempts ?? o.attempts ?? 0,
    status: o.status,
    finishReason: o.finish ?? null,
    error: o.error ?? null,
    latencyMs: Math.round(performance.now() - p.started),
    promptTokens: u?.prompt_tokens ?? null,
    completionTokens: u?.completion_tokens ?? null,
    totalTokens: u?.total_tokens ?? null,
    cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? null,
    cost: u?.cost ?? null,
    requestBody: p.loggedBody === undefined ? null : p.loggedBody,
    responseBody: p.loggedBody === undefined ? null : (o.response ?? null),
    createdAt: new Date(),
    sessionId: p.observation?.sessionId ?? null,
    externalUser: p.observation?.user ?? null,
    metadata: p.observation?.metadata ?? null,
    routing: p.routing ?? null,
  };
}

/** Collects a streamed response for the log (only when its bodies are kept). */
function collector() {
  let content = '';
  let reasoning = '';
  const calls: ToolCall[] = [];
  return {
    add(c: ChatChunk) {
      const d = c.choices[0]?.delta;
      if (!d) return;
      if (d.content) content += d.content;
      if (d.reasoning) reasoning += d.reasoning;
      for (const t of d.tool_calls ?? []) {
        const call = (calls[t.index] ??= {
          id: t.id ?? '',
          type: 'function',
          function: { name: t.function?.name ?? '', arguments: '' },
        });
        call.function.arguments += t.function?.arguments ?? '';
      }
    },
    message: () => ({
      role: 'assistant',
      content,
      ...(reasoning ? { reasoning } : {}),
      ...(calls.length ? { tool_calls: calls } : {}),
    }),
  };
}

/** The last chunk of an OpenAI stream: no choices, the usage. */
const usageChunk = (id: string, model: string, usage: Usage): ChatChunk => ({
  id,
  object: 'chat.completion.chunk',
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [],
  usage,
});

/** A provider's stream passed on batch by batch, recorded in the request log when it ends however it ends. */
export async function* recordedStream(o: {
  p: Prepared;
  served: Served;
  /** The serving call's key, for scrubbing it from a mid-stream failure. */
  apiKey: string | null;
  source: AsyncIterable<ChatChunk[]>;
  usageOf: (u: Usage | null | undefined, s: Served) => Usage;
  record: (p: Prepared, outcome: Outcome) => void;
  cancel: Cancel;
  /** Told when the stream ends: its time to first token, and its throughput when it finished with usage. */
  measured?: (m: { ok: true; ttftMs: number; tps: number | null } | { ok: false }) => void;
}): AsyncGenerator<ChatChunk[]> {
  const { p, served } = o;
  const collect = p.loggedBody === undefined ? null : collector();
  const outcome: Outcome = { status: 200, served, usage: null, finish: null };
  let firstAt = 0;
  try {
    for await (const batch of o.source) {
      if (!firstAt) firstAt = performance.now();
      for (const c of batch) {
        c.id = p.id;
        c.model = served.model;
        if (c.usage) {
          c.usage = outcome.usage = o.usageOf(c.usage, served);
          c[WIRE_TAIL] = undefined;
        }
        const finish = c.choices[0]?.finish_reason;
        if (finish) outcome.finish = finish;
        collect?.add(c);
      }
      yield batch;
    }
    if (!outcome.finish)
      throw new UpstreamError({ status: 502, message: 'the provider ended the stream before it finished' });
    // A provider that ignores stream_options sends no usage; every response has one, zeros as in a completion without it.
    if (o.measured) {
      const seconds = (performance.now() - firstAt) / 1000;
      const tokens = outcome.usage?.completion_tokens ?? 0;
      o.measured({
        ok: true,
        ttftMs: firstAt - served.startedAt,
        tps: tokens && seconds > 0 ? tokens / seconds : null,
      });
    }
    if (!outcome.usage) {
      outcome.usage = o.usageOf(null, served);
      yield [usageChunk(p.id, served.model, outcome.usage)];
    }
  } catch (err) {
    if (!o.cancel.aborted && err instanceof UpstreamError) o.measured?.({ ok: false });
    const api = o.cancel.aborted
      ? clientClosed()
      : err instanceof UpstreamError
        ? upstreamFailure(served.provider, o.apiKey, err)
        : null;
    outcome.status = api?.status ?? 500;
    outcome.error = api?.message ?? 'internal error';
    throw api ?? err;
  } finally {
    if (o.cancel.aborted && outcome.status === 200 && !outcome.finish) {
      outcome.status = 499;
      outcome.error = 'the client closed the request';
    }
    if (collect) outcome.response = { ...collect.message(), finish_reason: outcome.finish, usage: outcome.usage };
    o.record(p, outcome);
  }
}
