// The hand-written protobuf against its oracle, the official serializer: the same spans, the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { readable } from './broadcast.ts';
import { exportRequest, ProtoWriter, requestHead, writeSpan } from './otlp-protobuf.ts';
import { modelSpan, toolSpan, turnSpan, type SpanShape } from './spans.ts';

const HEAD = requestHead({ resource: { 'service.name': 'cohort' }, scope: 'cohort' });

/** Our request and the official serializer's for the same spans, ids and all. */
function both(spans: SpanShape[]) {
  const ids = spans.map((_, i) => (0x1a2b3c4d5e6f7000 + i * 0x10001).toString(16).padStart(16, '0').slice(-16));
  const w = new ProtoWriter(64);
  for (const [i, s] of spans.entries()) writeSpan(w, s, ids[i]!);
  const ours = exportRequest(HEAD, w.buf.subarray(0, w.pos));
  const official = ProtobufTraceSerializer.serializeRequest(spans.map((s, i) => readable(s, ids[i]!)));
  return { ours: Buffer.from(ours), official: Buffer.from(official!) };
}

const at = new Date('2026-11-27T15:04:05.678Z');
const row = {
  id: 'gen-01a21d47-dd54-7ef6-964c-ca52a043be7c',
  workspaceId: 'ws_1',
  apiStyle: 'chat',
  requestedModel: 'openai/gpt-4o-mini',
  model: 'openai/gpt-4o-mini',
  provider: 'openai',
  streamed: true,
  status: 200,
  finishReason: 'stop',
  latencyMs: 1234,
  promptTokens: 9,
  completionTokens: 5,
  cost: 0.0000042,
  createdAt: at,
};

test('the spans broadcast makes are written byte for byte as the official serializer writes them', () => {
  const spans: SpanShape[] = [
    modelSpan(row, null),
    // The caller's trace, parent, names and metadata; a session, a user (a remote parent sets the flags).
    modelSpan(
      { ...row, isByok: true, attempts: 3, cachedTokens: 4, step: 2, requestedModel: 'openrouter/auto' },
      {
        sessionId: 'sess-1',
        user: 'user-ü',
        metadata: {
          trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
          parent_span_id: '00f067aa0ba902b7',
          generation_name: 'résumé ✓',
          trace_name: 't',
          // Long enough that its KeyValue, AnyValue and the span itself need lengths of two and three bytes.
          long: 'x'.repeat(2048),
          wide: '日本語'.repeat(300),
        },
      },
    ),
    // A failure: an error status with its message.
    modelSpan({ ...row, status: 502, error: 'the upstream failed', cost: 0, promptTokens: null }, null),
    toolSpan({
      generationId: row.id,
      tool: 'datetime',
      callId: 'call_1',
      status: 'failed',
      startMs: at.getTime() - 7.5,
      endMs: at.getTime(),
      observation: null,
      workspaceId: 'ws_1',
    }),
    turnSpan({
      id: 'chatcmpl-1',
      model: null,
      sessionId: 'sess-2',
      usage: { prompt_tokens: 2 ** 40, completion_tokens: 0 },
      status: 499,
      finishReason: null,
      error: null,
      startMs: 0,
      endMs: 1,
      internId: 'int_1',
      internName: 'ada',
      workspaceId: 'ws_1',
    }),
  ];
  const { ours, official } = both(spans);
  assert.ok(ours.length > 4_000);
  assert.equal(ours.toString('hex'), official.toString('hex'));
  // One span (a batch is never empty: a collector's queue sends only when it holds some).
  const one = both(spans.slice(0, 1));
  assert.equal(one.ours.toString('hex'), one.official.toString('hex'));
});

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });

test('any attribute values, names and times are written as the official serializer writes them', () => {
  const value = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 200 }),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.array(fc.string({ maxLength: 40 }), { maxLength: 4 }),
  );
  const span = fc.record({
    name: fc.string({ unit: 'binary', maxLength: 300 }),
    traceId: hex(32),
    parentSpanId: fc.option(hex(16)),
    startMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    endMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    error: fc.option(fc.string({ maxLength: 300 })),
    attributes: fc.dictionary(fc.string({ minLength: 1, maxLength: 40 }), value, { maxKeys: 12 }),
  });
  fc.assert(
    fc.property(fc.array(span, { minLength: 1, maxLength: 4 }), (spans) => {
      const { ours, official } = both(spans);
      assert.equal(ours.toString('hex'), official.toString('hex'));
    }),
    { numRuns: 300 },
  );
});
