// The request options in each provider's dialect (docs/guides/model-requests.md): the router's
// `reasoning` ({effort, max_tokens, enabled, exclude}, routing.ts normalizeOptions) as OpenAI's
// `reasoning_effort` or Anthropic's `thinking` budget (a reasoning summary as its summarized display); structured output as Anthropic's
// `output_config.format` (JSON mode as a system instruction); automatic caching (`cache_control` at the top level) as Anthropic's
// breakpoint on the last cacheable block. Pure.

export type Reasoning = {
  effort?: string;
  max_tokens?: number;
  enabled?: boolean;
  exclude?: boolean;
  /** OpenAI Responses' reasoning summary (auto, concise, detailed): Anthropic's summarized thinking. */
  summary?: string;
};

/** OpenAI's effort levels; a budget is rounded to the nearest level. */
export function reasoningEffort(r: Reasoning): string | undefined {
  if (r.enabled === false) return undefined;
  if (r.effort) return r.effort === 'xhigh' ? 'high' : r.effort;
  if (r.max_tokens !== undefined) return r.max_tokens >= 16_384 ? 'high' : r.max_tokens >= 4096 ? 'medium' : 'low';
  return r.enabled ? 'medium' : undefined;
}

const BUDGET: Record<string, number> = { minimal: 1024, low: 2048, medium: 8192, high: 16_384, xhigh: 32_000 };
/** Anthropic's minimum thinking budget. */
const MIN_BUDGET = 1024;

/** Anthropic's `thinking` for a reasoning setting, and the max_tokens it needs (the budget is part of the output). */
export function thinkingOf(
  r: Reasoning,
  maxTokens: number,
): { thinking?: Record<string, unknown>; max_tokens: number } {
  const on =
    r.enabled !== false &&
    r.effort !== 'none' &&
    (r.enabled === true || r.effort !== undefined || r.max_tokens !== undefined);
  if (!on) return { max_tokens: maxTokens };
  const budget = Math.max(MIN_BUDGET, r.max_tokens ?? BUDGET[r.effort ?? 'medium'] ?? MIN_BUDGET);
  // A summary asked for is Anthropic's summarized thinking, which newer models omit unless asked.
  return {
    thinking: { type: 'enabled', budget_tokens: budget, ...(r.summary ? { display: 'summarized' } : {}) },
    max_tokens: maxTokens > budget ? maxTokens : budget + maxTokens,
  };
}

/** What an Anthropic upstream is told for JSON mode (json_object, or json_schema without a schema):
 * its structured output takes a schema only (output_config.format), and a schema of any object
 * would have to forbid every property, so the model is asked in the system prompt instead. An
 * assistant prefill of `{` is not used: it is refused with thinking on, and by newer models. */
export const JSON_MODE_INSTRUCTION =
  'Answer with a single JSON object and nothing else: no text before or after it, no code fence.';

export function jsonModeOf(format: unknown): boolean {
  const f = format as { type?: string; json_schema?: { schema?: unknown } } | undefined;
  return f?.type === 'json_object' || (f?.type === 'json_schema' && !f.json_schema?.schema);
}

/** Anthropic's structured output for a response_format: a JSON schema only (JSON mode: jsonModeOf). */
export function outputFormatOf(format: unknown): Record<string, unknown> | undefined {
  const f = format as { type?: string; json_schema?: { schema?: unknown } } | undefined;
  if (f?.type !== 'json_schema' || !f.json_schema?.schema) return undefined;
  return { format: { type: 'json_schema', schema: f.json_schema.schema } };
}

type Block = Record<string, unknown>;

/** Top-level caching: a breakpoint on the last cacheable block (the last content block of the
 * conversation, else the last system block), unless that block already has one. Changes `messages` and `system` in place. */
export function applyCacheBreakpoint(
  body: { messages: { content: Block[] }[]; system?: string | Block[] },
  mark: Record<string, unknown>,
): void {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const blocks = body.messages[i]!.content;
    const last = blocks.at(-1);
    if (last) {
      last.cache_control ??= mark;
      return;
    }
  }
  if (typeof body.system === 'string' && body.system) body.system = [{ type: 'text', text: body.system }];
  const last = Array.isArray(body.system) ? body.system.at(-1) : undefined;
  if (last) last.cache_control ??= mark;
}
