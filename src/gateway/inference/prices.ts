// Usage cost in USD from a price table: USD per million tokens for prompt, completion and cached
// prompt tokens, keyed by model slug. Built-in entries below; the operator extends or overrides
// them with a JSON file named by COHORT_PRICE_TABLE, e.g.
//   {"openai/gpt-4o": {"prompt": 2.5, "completion": 10, "cached_prompt": 1.25}}
// A key `model@provider` prices one endpoint of the model: another provider serving it
// (COHORT_PROVIDER_<SLUG>_MODELS) at its own price.
// A model with no entry costs 0. Pure except for the file read at start.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Usage } from './types.ts';

const Price = z
  .object({ prompt: z.number().min(0), completion: z.number().min(0), cached_prompt: z.number().min(0).optional() })
  .strict();
const PriceFile = z.record(z.string().min(1), Price);
export type Price = z.infer<typeof Price>;
export type PriceTable = ReadonlyMap<string, Price>;

/** `local/scripted` carries a nominal price so that cost accounting is exercised offline. */
const BUILT_IN: Record<string, Price> = {
  'local/scripted': { prompt: 1, completion: 2 },
  'openai/gpt-4o': { prompt: 2.5, completion: 10, cached_prompt: 1.25 },
  'openai/gpt-4o-mini': { prompt: 0.15, completion: 0.6, cached_prompt: 0.075 },
  'openai/gpt-4.1': { prompt: 2, completion: 8, cached_prompt: 0.5 },
  'openai/gpt-4.1-mini': { prompt: 0.4, completion: 1.6, cached_prompt: 0.1 },
  'anthropic/claude-sonnet-4': { prompt: 3, completion: 15, cached_prompt: 0.3 },
  'anthropic/claude-opus-4': { prompt: 15, completion: 75, cached_prompt: 1.5 },
  'anthropic/claude-3-5-haiku': { prompt: 0.8, completion: 4, cached_prompt: 0.08 },
  'deepseek/deepseek-chat': { prompt: 0.27, completion: 1.1, cached_prompt: 0.07 },
  'mistral/mistral-large-latest': { prompt: 2, completion: 6 },
};

export function loadPriceTable(file?: string): PriceTable {
  const extra = file ? PriceFile.parse(JSON.parse(readFileSync(file, 'utf8'))) : {};
  return new Map(Object.entries({ ...BUILT_IN, ...extra }));
}

/** An endpoint's price: `model@provider` in the table when it differs there, else the model's. */
export function priceOf(prices: PriceTable, model: string, provider: string): Price | null {
  return prices.get(`${model}@${provider}`) ?? prices.get(model) ?? null;
}

/** USD for a usage; cached prompt tokens are billed at the cached rate when the table has one. */
export function costOf(
  prices: PriceTable,
  model: string,
  usage: Pick<Usage, 'prompt_tokens' | 'completion_tokens' | 'prompt_tokens_details'>,
  provider?: string,
): number {
  const p = provider ? priceOf(prices, model, provider) : prices.get(model);
  if (!p) return 0;
  const cached = Math.min(usage.prompt_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0);
  const usd =
    ((usage.prompt_tokens - cached) * p.prompt +
      cached * (p.cached_prompt ?? p.prompt) +
      usage.completion_tokens * p.completion) /
    1e6;
  return Math.round(usd * 1e12) / 1e12;
}
