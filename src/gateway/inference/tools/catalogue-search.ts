// service:tool_search and service:experimental__search_models: search this installation's server
// tools (as this workspace may use them) with the request's own function tools, and the models
// this workspace can route to. Ranked by how many of the query's words each entry holds.
// May import: zod, ./types.ts.
import { z } from 'zod';
import type { ServerTool } from './types.ts';

const Config = z.object({ max_results: z.number().int().min(1).max(50).optional() }).strict();
const Args = z.object({ query: z.string().min(1).max(500).describe('words to look for') });

/** Entries holding at least one of the query's words, most words first (ties keep their order). */
export function rank<T>(entries: T[], text: (e: T) => string, query: string, max: number): T[] {
  const words = query
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  return entries
    .map((e, i) => {
      const hay = text(e).toLowerCase();
      return { e, i, score: words.filter((w) => hay.includes(w)).length };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, max)
    .map((s) => s.e);
}

export const toolSearch: ServerTool<z.infer<typeof Config>, z.infer<typeof Args>> = {
  type: 'service:tool_search',
  name: 'tool_search',
  description:
    "Search the tools available here: this installation's server tools and the request's own function tools.",
  config: Config,
  args: Args,
  async run(args, ctx) {
    const tools = [
      ...ctx.catalogue.serverTools().map((t) => ({
        type: t.type,
        name: t.name,
        description: t.description,
        available: t.available,
        ...(t.why ? { unavailable_because: t.why } : {}),
      })),
      ...ctx.catalogue.clientTools.map((t) => ({
        type: 'function',
        name: t.function?.name ?? '',
        description: (t.function as { description?: string } | undefined)?.description ?? '',
        available: true,
      })),
    ];
    return {
      tools: rank(tools, (t) => `${t.type} ${t.name} ${t.description}`, args.query, ctx.config.max_results ?? 10),
    };
  },
};

export const searchModels: ServerTool<z.infer<typeof Config>, z.infer<typeof Args>> = {
  type: 'service:experimental__search_models',
  name: 'experimental__search_models',
  description: 'Search the models this workspace can use, by id and name; returns their ids and prices.',
  config: Config,
  args: Args,
  async run(args, ctx) {
    const models = await ctx.catalogue.models();
    return {
      models: rank(models, (m) => `${m.id} ${m.name}`, args.query, ctx.config.max_results ?? 10).map((m) => ({
        id: m.id,
        name: m.name,
        pricing: m.pricing,
        ...(m.context_length != null ? { context_length: m.context_length } : {}),
      })),
    };
  },
};
