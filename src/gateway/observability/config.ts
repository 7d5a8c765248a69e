// The operator's observability settings (docs/reference/configuration.md): the installation's
// collector from the standard OpenTelemetry variables, which hosts workspaces' collectors may be
// on inside the network, and how long the request log is kept. Pure.
import { parseEgress, type EgressPolicy } from '../../shared/egress-policy.ts';
import { PROTOCOLS, type Protocol } from './exporter.ts';

export type ObservabilityEnv = {
  /** OTEL_EXPORTER_OTLP_*: the collector every broadcasting workspace's spans go to, or null. */
  installation: { url: string; protocol: Protocol; headers: Record<string, string> } | null;
  /** COHORT_BROADCAST_EGRESS: hosts a workspace's collector may be on though they are internal. */
  egress: EgressPolicy;
  timeoutMs: number;
  /** Days request-log rows and their logged bodies are kept (0: for good), and how often the sweep runs. */
  retention: { rowsDays: number; bodiesDays: number; everyMs: number };
};

const count = (env: Record<string, string | undefined>, name: string, def: number): number => {
  const v = env[name];
  if (v === undefined || v === '') return def;
  if (!/^\d+$/.test(v)) throw new Error(`${name}: a whole number, not ${v}`);
  return Number(v);
};

/** `k1=v1,k2=v2`, values percent-encoded (the OpenTelemetry specification's format). */
export function parseOtlpHeaders(spec: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (spec ?? '').split(',')) {
    if (!part.trim()) continue;
    const i = part.indexOf('=');
    if (i < 1) throw new Error('OTEL_EXPORTER_OTLP_HEADERS: each entry is key=value');
    out[decodeURIComponent(part.slice(0, i).trim())] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}

export function parseObservabilityEnv(env: Record<string, string | undefined>): ObservabilityEnv {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    'http/protobuf') as Protocol;
  if (!PROTOCOLS.includes(protocol))
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: ${protocol} is not supported here; use http/protobuf or http/json`);
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (url && !/^https?:\/\//.test(url)) throw new Error('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL');
  let egress: EgressPolicy;
  try {
    egress = parseEgress(env.COHORT_BROADCAST_EGRESS);
  } catch (err) {
    throw new Error(`COHORT_BROADCAST_EGRESS: ${(err as Error).message.replace(/^[A-Z_]+: /, '')}`);
  }
  return {
    installation: url
      ? {
          url,
          protocol,
          headers: {
            ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
            ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
          },
        }
      : null,
    egress,
    timeoutMs: Number(env.OTEL_EXPORTER_OTLP_TIMEOUT) || 5_000,
    retention: {
      rowsDays: count(env, 'COHORT_REQUEST_LOG_RETENTION_DAYS', 0),
      bodiesDays: count(env, 'COHORT_IO_LOG_RETENTION_DAYS', 0),
      everyMs: Math.max(1_000, count(env, 'COHORT_RETENTION_SWEEP_MS', 3_600_000)),
    },
  };
}
