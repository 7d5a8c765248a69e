// HTTP GET for the web tools, inside the operator's egress policy (docs/guides/server-tools.md,
// "web_fetch"): http and https only; the host on COHORT_WEB_FETCH_EGRESS (or, with `*`, any
// public host on ports 80 and 443) and within the request's allowed/blocked domains; every
// address the name resolves to checked, and only a public one connected to (pinned, so a second
// resolution cannot lead elsewhere); an address the operator listed literally is taken as meant.
// Redirects are followed by hand, each hop checked the same way. Size and time are bounded.
// May import: node built-ins, undici, ../../../shared/egress-policy.ts, ./types.ts.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { egressRule, internalAddress } from '../../../shared/egress-policy.ts';
import { ToolError, type ToolsEnv } from './types.ts';

export const MAX_REDIRECTS = 5;

export type Fetched = { url: string; status: number; contentType: string; body: Buffer; truncated: boolean };
export type Domains = { allowed?: string[]; blocked?: string[] };

const matches = (host: string, domain: string) => {
  const d = domain.toLowerCase().replace(/^\*\./, '').replace(/\.$/, '');
  return host === d || host.endsWith(`.${d}`);
};

/** Why the policy refuses `url`, or the host, port and whether its address is taken as meant. */
export function checkTarget(
  url: URL,
  env: ToolsEnv['webFetch'],
  domains: Domains,
): { host: string; port: number; literal: boolean } {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolError(`refused: only http and https URLs are fetched, not ${url.protocol}`);
  if (url.username || url.password) throw new ToolError('refused: a URL with credentials is not fetched');
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  if (domains.allowed?.length && !domains.allowed.some((d) => matches(host, d)))
    throw new ToolError(`refused: ${host} is not among the request's allowed_domains`);
  if (domains.blocked?.some((d) => matches(host, d)))
    throw new ToolError(`refused: ${host} is among the request's blocked_domains`);
  const rule = egressRule(env.policy, host, port);
  if (!rule && !(env.anyPublic && (port === 80 || port === 443)))
    throw new ToolError(`refused: ${host}:${port} is not on this gateway's egress list for web tools (${env.source})`);
  return { host, port, literal: rule !== null && !rule.wildcard && isIP(rule.host) !== 0 };
}

/** The one address to connect to: a public one, or the literal address the operator listed. */
async function addressOf(host: string, literal: boolean): Promise<{ address: string; family: number }> {
  const addrs = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await lookup(host, { all: true, verbatim: true });
  if (literal) return addrs[0]!;
  const usable = addrs.filter((a) => !internalAddress(a.address));
  if (!usable.length)
    throw new ToolError(
      `refused: ${host} ${isIP(host) ? 'is' : 'resolves to'} an internal address (loopback, private or otherwise not public)`,
    );
  return usable[0]!;
}

export async function guardedFetch(
  target: string,
  o: { env: ToolsEnv['webFetch']; domains?: Domains; signal: AbortSignal; accept?: string },
): Promise<Fetched> {
  const signal = AbortSignal.any([o.signal, AbortSignal.timeout(o.env.timeoutMs)]);
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ToolError(`not a URL: ${JSON.stringify(target.slice(0, 200))}`);
  }
  for (let hop = 0; ; hop++) {
    const { host, literal } = checkTarget(url, o.env, o.domains ?? {});
    let pinned: { address: string; family: number };
    try {
      pinned = await addressOf(host, literal);
    } catch (err) {
      if (err instanceof ToolError) throw err;
      throw new ToolError(`could not resolve ${host}`);
    }
    const agent = new Agent({
      connect: {
        lookup: (_h: string, _o: unknown, cb: (e: null, a: string, f: number) => void) =>
          cb(null, pinned.address, pinned.family),
      } as object,
    });
    try {
      const res = await request(url, {
        dispatcher: agent,
        method: 'GET',
        headers: {
          'user-agent': 'cohort-web-fetch/1',
          accept: o.accept ?? 'text/html,text/plain,application/json;q=0.9,*/*;q=0.5',
        },
        signal,
      }).catch((err: Error) => {
        throw new ToolError(
          signal.aborted ? `timed out after ${o.env.timeoutMs} ms` : `could not fetch ${url.origin}: ${err.message}`,
        );
      });
      // The signals stay tied to the request after it is read: an abort then must find a listener.
      res.body.on('error', () => {});
      const location = res.headers.location;
      if (res.statusCode >= 300 && res.statusCode < 400 && location) {
        res.body.destroy();
        if (hop >= MAX_REDIRECTS) throw new ToolError(`too many redirects (more than ${MAX_REDIRECTS})`);
        url = new URL(String(location), url);
        continue;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      try {
        for await (const chunk of res.body) {
          const b = chunk as Buffer;
          const room = o.env.maxBytes - size;
          chunks.push(b.length > room ? b.subarray(0, room) : b);
          size += Math.min(b.length, room);
          if (b.length >= room && size >= o.env.maxBytes) {
            truncated = true;
            res.body.destroy();
            break;
          }
        }
      } catch {
        if (!truncated)
          throw new ToolError(signal.aborted ? `timed out after ${o.env.timeoutMs} ms` : 'the connection broke');
      }
      const type = res.headers['content-type'];
      return {
        url: url.href,
        status: res.statusCode,
        contentType: (Array.isArray(type) ? type[0] : type) ?? '',
        body: Buffer.concat(chunks),
        truncated,
      };
    } finally {
      void agent.close();
    }
  }
}
