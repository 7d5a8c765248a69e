// OTLP/HTTP export of spans to one collector: each batch, already serialized (broadcast.ts), one
// POST. Written here rather than taken from @opentelemetry/exporter-trace-otlp-http
// because that exporter merges the process's OTEL_EXPORTER_OTLP_* variables into every
// exporter it makes: the installation's collector headers (its API key) would go to every
// workspace's collector. Here each exporter sends only its own headers.
//
// One POST per batch, bounded in time, never retried: a batch the collector does not take is
// dropped and counted (the request it came from was answered long before). A workspace's
// collector is connected to only at a public address, unless the operator listed its host
// (COHORT_BROADCAST_EGRESS): a tenant cannot make the gateway post to its own network.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { internalAddress } from '../../shared/egress-policy.ts';

export type Protocol = 'http/json' | 'http/protobuf';
export const PROTOCOLS = ['http/json', 'http/protobuf'] as const;

export type ExporterOptions = {
  /** The full traces URL (`…/v1/traces`). */
  url: string;
  protocol: Protocol;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Whether the collector may be at an internal address (the operator's own, or one it listed). */
  internalAllowed: boolean;
  /** Told of each batch's end: exported, or dropped (the collector refused it, or was not reached). */
  onResult(spans: number, ok: boolean): void;
};

/** A lookup that gives only public addresses (connections to a name that resolves inside fail). */
function publicLookup(
  host: string,
  opts: { all?: boolean },
  cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
) {
  dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => {
    if (err) return cb(err, []);
    const usable = addrs.filter((a) => !internalAddress(a.address));
    if (!usable.length) return cb(new Error(`${host} resolves to an internal address`), []);
    if (opts.all) cb(null, usable);
    else cb(null, usable[0]!.address, usable[0]!.family);
  });
}

/** Why a collector URL is refused (null: it is fine): http(s) only, no credentials in it, no internal literal address. */
export function urlProblem(url: string, o: { internalAllowed: boolean }): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http or https URL';
  if (u.username || u.password) return 'must not hold credentials (send them as headers)';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!o.internalAllowed && (host === 'localhost' || (isIP(host) && internalAddress(host))))
    return 'names an internal address, which only the operator may allow (COHORT_BROADCAST_EGRESS)';
  return null;
}

export class OtlpHttpExporter {
  private readonly agent: Agent;
  private readonly contentType: string;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly o: ExporterOptions) {
    this.agent = new Agent({
      connect: { timeout: o.timeoutMs, ...(o.internalAllowed ? {} : { lookup: publicLookup }) },
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      connections: 4,
    });
    this.contentType = o.protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
  }

  /** Posts one batch of `spans` spans (no body: it could not be serialized, and is dropped). */
  export(body: Uint8Array | undefined, spans: number): void {
    const sent = (async () => {
      if (!body) return false;
      const res = await request(this.o.url, {
        method: 'POST',
        headers: { ...this.o.headers, 'content-type': this.contentType },
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300;
    })().catch(() => false);
    const settled = sent.then((ok) => {
      this.inFlight.delete(settled);
      this.o.onResult(spans, ok);
    });
    this.inFlight.add(settled);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    await this.agent.close();
  }
}
