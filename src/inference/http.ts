// HTTP to upstream providers over one keep-alive undici pool: a POST (src/http/exchange.ts) whose
// transport failures become UpstreamError (timeouts and connection errors are retryable, status
// 0), and the mapping of a non-2xx answer to an UpstreamError carrying the provider's own message
// with secrets scrubbed.
import { Agent, type Dispatcher } from 'undici';
import { scrub } from '../log.ts';
import { UpstreamError } from './types.ts';
import { exchange, type Upstream } from '../http/exchange.ts';

export function createDispatcher(opts: { timeoutMs: number }): Agent {
  return new Agent({ keepAliveTimeout: 30_000, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs, connect: { timeout: Math.min(opts.timeoutMs, 10_000) } });
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** A transport failure as an UpstreamError; a client abort is rethrown as is. */
export function transportError(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted || err instanceof UpstreamError) return err;
  const code = (err as { code?: string }).code ?? 'unknown';
  if (TIMEOUTS.has(code)) return new UpstreamError({ status: 0, timeout: true, message: 'the provider did not answer in time' });
  return new UpstreamError({ status: 0, message: `could not reach the provider (${code})` });
}

/** URLs are few (one per provider endpoint), so each is parsed once. */
const parsed = new Map<string, { origin: string; path: string }>();
function target(url: string) {
  let t = parsed.get(url);
  if (!t) {
    const u = new URL(url);
    t = { origin: u.origin, path: u.pathname + u.search };
    if (parsed.size < 1000) parsed.set(url, t);
  }
  return t;
}

export function post(opts: { dispatcher: Dispatcher; url: string; headers: Record<string, string>; body: string; signal: AbortSignal }): Promise<Upstream> {
  const request = { ...target(opts.url), method: 'POST' as const, headers: { 'content-type': 'application/json', ...opts.headers }, body: opts.body };
  return exchange(opts.dispatcher, request, opts.signal, (err) => transportError(err, opts.signal));
}

/** Removes the credential itself and anything shaped like a provider or bearer key. */
export function scrubSecret(text: string, apiKey: string | null): string {
  const plain = apiKey && apiKey.length >= 4 ? text.split(apiKey).join('[REDACTED]') : text;
  return scrub(plain).replace(/\b(sk|pk|rk|gsk|xai|key)-[A-Za-z0-9_*.-]{6,}/g, '[REDACTED]');
}

/** A non-2xx answer as an UpstreamError with the provider's message (its body is consumed). */
export async function failure(res: Upstream, apiKey: string | null): Promise<UpstreamError> {
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 500);
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message);
    if (typeof m === 'string') message = m;
  } catch {}
  return new UpstreamError({ status: res.statusCode, message: scrubSecret(message || `status ${res.statusCode}`, apiKey) });
}

/** JSON of a 2xx body; a body that is not JSON is a retryable bad-gateway failure. */
export async function jsonBody(res: Upstream): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError({ status: 502, message: 'the provider answered with a malformed body' });
  }
}
