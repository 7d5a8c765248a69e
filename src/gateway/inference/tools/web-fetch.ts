// service:web_fetch (and the `web-fetch` plugin): a web page as readable text, fetched through
// guarded-fetch.ts (the operator's egress policy; never an internal address, on any hop).
// May import: zod, ./types.ts, ./guarded-fetch.ts, ./html-text.ts.
import { z } from 'zod';
import { type ServerTool, ToolError } from './types.ts';
import { guardedFetch } from './guarded-fetch.ts';
import { htmlToText } from './html-text.ts';

const Domains = z.array(z.string().min(1).max(253)).max(64);
const Config = z
  .object({
    allowed_domains: Domains.optional(),
    blocked_domains: Domains.optional(),
    /** Characters of the page's text the model gets, about four a token. */
    max_content_tokens: z.number().int().min(1).max(100_000).optional(),
    max_uses: z.number().int().min(1).max(30).optional(),
  })
  .strict();
const Args = z.object({ url: z.string().min(1).max(4096).describe('the http or https URL to fetch') });

export const webFetchConfigured = (env: { webFetch: { policy: { rules: unknown[] }; anyPublic: boolean } }) =>
  env.webFetch.anyPublic || env.webFetch.policy.rules.length > 0;

/** A fetched body as text: HTML made readable, text and JSON as they are; anything else refused. */
export function readable(body: Buffer, contentType: string): { title: string | null; text: string } {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const raw = body.toString('utf8');
  if (type === 'text/html' || type === 'application/xhtml+xml' || (!type && /<html[\s>]/i.test(raw.slice(0, 2048))))
    return htmlToText(raw);
  if (
    !type ||
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type.endsWith('+xml')
  )
    return { title: null, text: raw };
  throw new ToolError(`the page is ${type}, not text`);
}

export const webFetch: ServerTool<z.infer<typeof Config>, z.infer<typeof Args>> = {
  type: 'service:web_fetch',
  name: 'web_fetch',
  description: 'Fetch a web page (http or https) and read it as text.',
  config: Config,
  args: Args,
  unconfigured: ({ env }) =>
    webFetchConfigured(env)
      ? null
      : 'no egress for web tools is configured on this gateway: its operator sets COHORT_WEB_FETCH_EGRESS (or COHORT_INTERN_EGRESS)',
  async run(args, ctx) {
    const got = await guardedFetch(args.url, {
      env: ctx.env.webFetch,
      domains: { allowed: ctx.config.allowed_domains, blocked: ctx.config.blocked_domains },
      signal: ctx.signal,
    });
    const page = readable(got.body, got.contentType);
    const limit = ctx.config.max_content_tokens ? ctx.config.max_content_tokens * 4 : Number.POSITIVE_INFINITY;
    const cut = page.text.length > limit;
    return {
      url: got.url,
      status: got.status,
      content_type: got.contentType || null,
      title: page.title,
      content: cut ? page.text.slice(0, limit) : page.text,
      truncated: got.truncated || cut,
    };
  },
};
