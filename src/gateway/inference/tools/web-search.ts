// service:web_search (and the `web` plugin): a web search through the backend the operator
// configures (COHORT_WEB_SEARCH_PROVIDER): a SearXNG instance's JSON API, Brave Search's API or
// Tavily's, each by its own wire format. With `max_characters`, each result's page is read too,
// through guarded-fetch.ts (the web tools' egress policy: a result pointing into the host or a
// private network is listed but never fetched).
// May import: zod, undici, ./types.ts, ./guarded-fetch.ts, ./web-fetch.ts.
import { z } from 'zod';
import { request } from 'undici';
import { type ServerTool, ToolError, type ToolsEnv } from './types.ts';
import { guardedFetch } from './guarded-fetch.ts';
import { readable, webFetchConfigured } from './web-fetch.ts';

export const SEARCH_DEFAULT_URL = {
  brave: 'https://api.search.brave.com/res/v1/web/search',
  tavily: 'https://api.tavily.com/search',
} as const;

const Domains = z.array(z.string().min(1).max(253)).max(64);
const Config = z
  .object({
    max_results: z.number().int().min(1).max(20).optional(),
    allowed_domains: Domains.optional(),
    excluded_domains: Domains.optional(),
    /** Read each result's page and give the model up to this many characters of its text. */
    max_characters: z.number().int().min(0).max(20_000).optional(),
    max_uses: z.number().int().min(1).max(30).optional(),
  })
  .strict();
const Args = z.object({ query: z.string().min(1).max(1000).describe('what to search the web for') });

export type SearchResult = { title: string; url: string; snippet: string };

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** One search on the configured backend, in its own wire format. */
export async function search(
  env: ToolsEnv['webSearch'],
  query: string,
  count: number,
  signal: AbortSignal,
): Promise<SearchResult[]> {
  const provider = env.provider!;
  const base = env.url ?? SEARCH_DEFAULT_URL[provider as keyof typeof SEARCH_DEFAULT_URL];
  const timeout = AbortSignal.any([signal, AbortSignal.timeout(20_000)]);
  let res: Awaited<ReturnType<typeof request>>;
  try {
    if (provider === 'tavily') {
      res = await request(base, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${env.apiKey}` },
        body: JSON.stringify({ query, max_results: count }),
        signal: timeout,
      });
    } else {
      const u = new URL(provider === 'searxng' ? new URL('search', base.endsWith('/') ? base : `${base}/`) : base);
      u.searchParams.set('q', query);
      if (provider === 'searxng') u.searchParams.set('format', 'json');
      else u.searchParams.set('count', String(count));
      res = await request(u, {
        headers: provider === 'brave' ? { accept: 'application/json', 'x-subscription-token': env.apiKey ?? '' } : {},
        signal: timeout,
      });
    }
  } catch {
    throw new ToolError(`the search backend (${provider}) did not answer`);
  }
  res.body.on('error', () => {});
  const text = await res.body.text().catch(() => '');
  if (res.statusCode !== 200) throw new ToolError(`the search backend (${provider}) answered ${res.statusCode}`);
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ToolError(`the search backend (${provider}) answered something other than JSON`);
  }
  const rows =
    provider === 'brave'
      ? ((data.web as { results?: unknown[] } | undefined)?.results ?? [])
      : ((data.results as unknown[] | undefined) ?? []);
  return rows
    .filter(
      (r): r is Record<string, unknown> =>
        typeof r === 'object' && r !== null && typeof (r as { url?: unknown }).url === 'string',
    )
    .map((r) => ({
      title: str(r.title),
      url: str(r.url),
      snippet: str(provider === 'brave' ? r.description : r.content),
    }));
}

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return '';
  }
};
const under = (host: string, domains: string[]) =>
  domains.some((d) => host === d.toLowerCase() || host.endsWith(`.${d.toLowerCase()}`));

export const webSearch: ServerTool<z.infer<typeof Config>, z.infer<typeof Args>> = {
  type: 'service:web_search',
  name: 'web_search',
  description: 'Search the web; returns titles, URLs and snippets of the results.',
  config: Config,
  args: Args,
  unconfigured: ({ env, config }) =>
    !env.webSearch.provider
      ? 'no search backend is configured on this gateway: its operator sets COHORT_WEB_SEARCH_PROVIDER (searxng, brave or tavily)'
      : config.max_characters && !webFetchConfigured(env)
        ? 'max_characters reads result pages, and no egress for web tools is configured on this gateway: its operator sets COHORT_WEB_FETCH_EGRESS (or COHORT_INTERN_EGRESS)'
        : null,
  async run(args, ctx) {
    const max = ctx.config.max_results ?? 5;
    const found = (await search(ctx.env.webSearch, args.query, max * 2, ctx.signal))
      .filter((r) => {
        const host = hostOf(r.url);
        if (ctx.config.allowed_domains?.length && !under(host, ctx.config.allowed_domains)) return false;
        return !under(host, ctx.config.excluded_domains ?? []);
      })
      .slice(0, max);
    const chars = ctx.config.max_characters ?? 0;
    const results = [];
    for (const r of found) {
      if (!chars) {
        results.push(r);
        continue;
      }
      try {
        const got = await guardedFetch(r.url, { env: ctx.env.webFetch, signal: ctx.signal });
        results.push({ ...r, content: readable(got.body, got.contentType).text.slice(0, chars) });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        results.push({
          ...r,
          content: null,
          content_error: err instanceof ToolError ? err.message : 'could not read the page',
        });
      }
    }
    return { query: args.query, results };
  },
};
