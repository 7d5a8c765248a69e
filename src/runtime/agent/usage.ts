// A turn's usage summed over its model calls. Costs are USD decimals: a float sum drifts
// (0.000016 + 0.000034 is 0.000049999999999999996), so each sum is rounded to the picodollar,
// the precision the gateway prices at (inference/prices.ts). Pure; imports nothing.

export type TurnUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost?: number;
  prompt_tokens_details?: { cached_tokens: number };
};

/** a + b in USD, without float noise. */
export const addUsd = (a: number, b: number): number => Math.round((a + b) * 1e12) / 1e12;

/** One call's usage as a provider reports it (cached tokens may be absent). */
export type CallUsage = Omit<TurnUsage, 'prompt_tokens_details'> & {
  prompt_tokens_details?: { cached_tokens?: number };
};

export function addUsage(total: TurnUsage, u: CallUsage): TurnUsage {
  const cached = (total.prompt_tokens_details?.cached_tokens ?? 0) + (u.prompt_tokens_details?.cached_tokens ?? 0);
  const cost = u.cost === undefined ? total.cost : addUsd(total.cost ?? 0, u.cost);
  return {
    prompt_tokens: total.prompt_tokens + u.prompt_tokens,
    completion_tokens: total.completion_tokens + u.completion_tokens,
    total_tokens: total.total_tokens + u.total_tokens,
    ...(cost === undefined ? {} : { cost }),
    ...(u.prompt_tokens_details || total.prompt_tokens_details
      ? { prompt_tokens_details: { cached_tokens: cached } }
      : {}),
  };
}
