// GET /api/v1/models entries in OpenRouter's list shape (the official SDK's `Model`, which its
// models.list() validates): id, name, pricing in USD per token as decimal strings, and the
// fields the SDK requires, filled with what cohort knows (context length: unknown, so null).
// A model without a known price says "-1", as OpenRouter does for a price it cannot state.
// Pure; imports types only.
import type { Price } from './prices.ts';

export const SCRIPTED = 'local/scripted';

/** USD per million tokens → USD per token as a plain decimal ("0.0000025", never "2.5e-6"). */
const perToken = (perMillion: number) => (perMillion / 1e6).toFixed(15).replace(/\.?0+$/, '') || '0';

/** One provider serving the model here, with what this gateway measured of it (endpoint-stats.ts). */
export type EndpointInfo = {
  provider: string;
  provider_model: string;
  price: Price | null;
  credentials: ('byok' | 'shared')[];
  stats: { ttftMs: number | null; tps: number | null; successRate: number | null; healthy: boolean };
};

const pricing = (price: Price | null | undefined) =>
  price
    ? {
        prompt: perToken(price.prompt),
        completion: perToken(price.completion),
        ...(price.cached_prompt === undefined ? {} : { input_cache_read: perToken(price.cached_prompt) }),
      }
    : { prompt: '-1', completion: '-1' };

export function modelEntry(id: string, price: Price | undefined, endpoints: EndpointInfo[] = []) {
  const scripted = id === SCRIPTED;
  return {
    id,
    canonical_slug: id,
    name: scripted ? 'cohort: scripted model (deterministic, offline)' : id,
    ...(scripted
      ? {
          description:
            'A deterministic model driven by directives in the last user message (docs/reference/scripted-model.md); not a language model.',
        }
      : {}),
    created: 0,
    context_length: null,
    architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
    pricing: pricing(price),
    top_provider: { context_length: null, max_completion_tokens: null, is_moderated: false },
    per_request_limits: null,
    supported_parameters: ['max_tokens', 'temperature', 'stop', 'tools', 'tool_choice'],
    default_parameters: null,
    supported_voices: null,
    links: { details: '/api/v1/models' },
    /** The providers serving it for this workspace, in the order a request without preferences tries them. */
    endpoints: endpoints.map((e) => ({
      provider: e.provider,
      provider_model: e.provider_model,
      pricing: pricing(e.price),
      credentials: e.credentials,
      latency_ms: e.stats.ttftMs === null ? null : Math.round(e.stats.ttftMs),
      throughput_tps: e.stats.tps === null ? null : Math.round(e.stats.tps * 10) / 10,
      success_rate: e.stats.successRate,
      healthy: e.stats.healthy,
    })),
  };
}

export type ModelEntry = ReturnType<typeof modelEntry>;
