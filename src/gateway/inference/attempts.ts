// Trying the routes of one request in order: each model's credentials (and shared capacity),
// then the next model. Retryable failures (408, 429, 5xx, timeouts, connection errors) move on;
// any other failure is returned at once. Failures become the API's errors with the provider's
// message, scrubbed of the failing call's key; a credential is unsealed only here, for the one
// call that uses it.
import { type ApiError, clientClosed, noUsableCredential, providerFailed } from '../errors.ts';
import { scrub, type Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import { UpstreamError, type Cancel, type ProviderAdapter, type UpstreamCall } from './types.ts';
import type { Candidate } from './select.ts';
import type { ProviderInfo } from './providers/catalogue.ts';
import type { CredentialRow } from './routing-config.ts';

export type Route = {
  model: string;
  provider: ProviderInfo;
  providerModel: string;
  adapter: ProviderAdapter;
  candidates: Candidate[];
  credentials: CredentialRow[];
};

export type Served = {
  model: string;
  provider: string;
  credentialId: string | null;
  isByok: boolean;
  attempts: number;
  /** performance.now() when the serving attempt began: the endpoint's stats measure from it. */
  startedAt: number;
};

/** Removes the credential itself and anything shaped like a provider or bearer key. */
export function scrubSecret(text: string, apiKey: string | null): string {
  const plain = apiKey && apiKey.length >= 4 ? text.split(apiKey).join('[REDACTED]') : text;
  return scrub(plain).replace(/\b(sk|pk|rk|gsk|xai|key)-[A-Za-z0-9_*.-]{6,}/g, '[REDACTED]');
}

/** A failure that ends the request, in the API's error shape. Every provider failure, before or
 * after the stream opened, passes here, so the key of the call that failed (`apiKey`) is removed
 * from the provider's message whichever path produced it. */
export function upstreamFailure(provider: string, apiKey: string | null, err: UpstreamError): ApiError {
  const said = scrubSecret(err.message, apiKey);
  const message = `provider ${provider}: ${said || `status ${err.status}`}`;
  if (err.timeout) return providerFailed({ status: 504, reason: 'timeout', message });
  if (err.status === 429) return providerFailed({ status: 429, reason: 'rate_limited', message });
  if (err.retryable) return providerFailed({ status: 502, reason: 'turn_failed', retryable: true, message });
  if (err.status === 400 || err.status === 422) return providerFailed({ status: 400, reason: 'bad_request', message });
  if (err.status === 401 || err.status === 403 || err.status === 404)
    return providerFailed({ status: err.status, reason: 'turn_failed', retryable: false, message });
  return providerFailed({
    status: 502,
    reason: 'turn_failed',
    retryable: false,
    message: `provider ${provider}: ${unexpected(err.status, said)}`,
  });
}

/** Any other status is no answer of ours to pass on (a 204 would be an empty success, a 301 a
 * redirect without its Location): a 502 that names it. A redirect's body is a page, not a message. */
function unexpected(status: number, said: string): string {
  if (status >= 300 && status < 400) return `its base URL redirects (${status}); redirects are not followed`;
  return `unexpected status ${status}${said ? `: ${said}` : ''}`;
}

function keyFor(route: Route, c: Candidate, sealer: Sealer): string | null {
  if (c.kind === 'shared') return route.provider.sharedKey;
  const row = route.credentials.find((r) => r.id === c.credentialId)!;
  return sealer.open(row.sealedKey, row.id);
}

export async function tryRoutes<T>(opts: {
  routes: Route[];
  body: UpstreamCall['body'];
  cancel: Cancel;
  sealer: Sealer;
  log: Logger;
  run: (adapter: ProviderAdapter, call: UpstreamCall) => Promise<T>;
  /** Counts the upstream calls made, also when all of them fail. */
  stats: { attempts: number };
  onUpstreamError?: (provider: string) => void;
  /** Told of each attempt that failed at its endpoint (its stats, session stickiness). */
  onEndpointFailure?: (route: Route, o: { shared: boolean; retryable: boolean }) => void;
}): Promise<{ value: T; served: Served; apiKey: string | null }> {
  let last: ApiError | null = null;
  for (const route of opts.routes) {
    for (const c of route.candidates) {
      const credentialId = c.kind === 'byok' ? c.credentialId : null;
      let apiKey: string | null;
      try {
        apiKey = keyFor(route, c, opts.sealer);
      } catch {
        opts.log.error({ credentialId }, 'a provider credential could not be unsealed; skipped');
        continue;
      }
      const attempts = ++opts.stats.attempts;
      const startedAt = performance.now();
      try {
        const call = {
          model: route.providerModel,
          body: opts.body,
          baseUrl: route.provider.baseUrl ?? '',
          apiKey,
          cancel: opts.cancel,
        };
        const value = await opts.run(route.adapter, call);
        return {
          value,
          served: {
            model: route.model,
            provider: route.provider.slug,
            credentialId,
            isByok: c.kind === 'byok',
            attempts,
            startedAt,
          },
          apiKey,
        };
      } catch (err) {
        if (opts.cancel.aborted) throw clientClosed();
        if (!(err instanceof UpstreamError)) throw err;
        opts.onUpstreamError?.(route.provider.slug);
        opts.onEndpointFailure?.(route, { shared: c.kind === 'shared', retryable: err.retryable });
        opts.log.warn(
          {
            provider: route.provider.slug,
            model: route.model,
            credentialId,
            status: err.status,
            retryable: err.retryable,
          },
          'upstream attempt failed',
        );
        last = upstreamFailure(route.provider.slug, apiKey, err);
        if (!err.retryable) throw last;
      }
    }
  }
  if (last) throw last;
  throw noUsableCredential();
}
