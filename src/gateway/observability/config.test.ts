import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseObservabilityEnv, parseOtlpHeaders } from './config.ts';

test('the installation collector from the standard OpenTelemetry variables', () => {
  assert.equal(parseObservabilityEnv({}).installation, null);
  assert.deepEqual(
    parseObservabilityEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/api/public/otel/',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20cGs6c2s=,x-tenant=a',
    }).installation,
    {
      url: 'https://otel.example/api/public/otel/v1/traces',
      protocol: 'http/protobuf',
      headers: { Authorization: 'Basic cGs6c2s=', 'x-tenant': 'a' },
    },
  );
  const traces = parseObservabilityEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'https://ignored.example',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo.example/v1/traces',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  }).installation;
  assert.deepEqual([traces?.url, traces?.protocol], ['https://tempo.example/v1/traces', 'http/json']);
  assert.throws(
    () => parseObservabilityEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    /^Error: OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported here; use http\/protobuf or http\/json$/,
  );
  assert.throws(
    () => parseObservabilityEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel:4318' }),
    /must be an http or https URL/,
  );
  assert.throws(() => parseOtlpHeaders('novalue'), /each entry is key=value/);
});

test('retention and the broadcast egress list', () => {
  assert.deepEqual(parseObservabilityEnv({}).retention, { rowsDays: 0, bodiesDays: 0, everyMs: 3_600_000 });
  assert.deepEqual(
    parseObservabilityEnv({ COHORT_REQUEST_LOG_RETENTION_DAYS: '90', COHORT_IO_LOG_RETENTION_DAYS: '7' }).retention,
    { rowsDays: 90, bodiesDays: 7, everyMs: 3_600_000 },
  );
  assert.throws(
    () => parseObservabilityEnv({ COHORT_REQUEST_LOG_RETENTION_DAYS: '-1' }),
    /^Error: COHORT_REQUEST_LOG_RETENTION_DAYS: a whole number, not -1$/,
  );
  assert.deepEqual(parseObservabilityEnv({ COHORT_BROADCAST_EGRESS: 'otel.internal:4318' }).egress.rules, [
    { host: 'otel.internal', wildcard: false, port: 4318 },
  ]);
  assert.throws(() => parseObservabilityEnv({ COHORT_BROADCAST_EGRESS: 'a b' }), /^Error: COHORT_BROADCAST_EGRESS: /);
});
