// HTTP to upstream providers over one keep-alive pool (src/shared/http/h1.ts): a POST whose
// transport failures become UpstreamError (timeouts and connection errors are retryable, status
// 0), and the mapping of a non-2xx answer to an UpstreamError carrying the provider's own message
// (secrets are scrubbed where every failure becomes an API error: src/gateway/inference/attempts.ts).
import { UpstreamError, type Cancel } from '../types.ts';
import { H1Client } from '../../../shared/http/h1.ts';
import type { Upstream } from '../../../shared/http/body.ts';

/** The same lean client as the daemon link (measured: undici's per-request work was the largest
 * single item of the gateway's CPU per model request); `timeoutMs` bounds the wait for the answer
 * and each silence within it. */
export function createHttpClient(opts: { timeoutMs: number }): H1Client {
  return new H1Client({ timeoutMs: opts.timeoutMs, connectTimeoutMs: Math.min(opts.timeoutMs, 10_000), idleMs: 30_000 });
}

/** A transport failure as an UpstreamError; a client abort is rethrown as is. */
export function transportError(err: unknown, cancel: Cancel): unknown {
  if (cancel.aborted || err instanceof UpstreamError) return err;
  const code = (err as { code?: string }).code ?? 'unknown';
  if (code === 'ETIMEDOUT') return new UpstreamError({ status: 0, timeout: true, message: 'the provider did not answer in time' });
  return new UpstreamError({ status: 0, message: `could not reach the provider (${code})` });
}

/** POSTs to `base` + `path` (base: the provider's URL, which may carry a path prefix such as /v1);
 * a cancellation closes the connection, before the answer or while its body streams. */
export function post(opts: { client: H1Client; base: string; path: string; headers: Record<string, string>; body: string; cancel: Cancel }): Promise<Upstream> {
  const { cancel } = opts;
  if (cancel.aborted) return Promise.reject(new Error('aborted'));
  const request = { base: opts.base, path: opts.path, method: 'POST' as const, headers: { 'content-type': 'application/json', ...opts.headers }, body: opts.body };
  const call = opts.client.start(request, (err) => transportError(err, cancel));
  cancel.onCancel(call.cancel);
  return call.response;
}

/** A non-200 answer as an UpstreamError with the provider's message, unscrubbed, or '' when its
 * body has none (its body is consumed). */
export async function failure(res: Upstream): Promise<UpstreamError> {
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 500);
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message);
    if (typeof m === 'string') message = m;
  } catch {}
  return new UpstreamError({ status: res.statusCode, message });
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
