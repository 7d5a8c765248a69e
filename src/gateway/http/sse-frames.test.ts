import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { RunEvent } from '../../shared/daemon-protocol.ts';
import { initialState, mapApiEnding, mapEvent, type MapState } from '../interns/chunks.ts';
import { chunkEncoder } from './sse-frames.ts';

const text = fc.string({ unit: 'binary' });
const event: fc.Arbitrary<Omit<RunEvent, 'seq'>> = fc.oneof(
  fc.record({ type: fc.constant('text' as const), text }),
  fc.record({ type: fc.constant('reasoning' as const), text }),
  fc.record({ type: fc.constant('model' as const), model: text }),
  fc.record({
    type: fc.constant('run' as const),
    run_id: fc.constant('run_1'),
    session_id: text,
    approval_mode: fc.constant('manual' as const),
  }),
  fc.record({
    type: fc.constant('usage' as const),
    usage: fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat(), total_tokens: fc.nat() }),
  }),
  fc.record({
    type: fc.constant('completed' as const),
    stop_reason: fc.constant('end_turn'),
    usage: fc.constant(null),
    model: fc.option(text, { nil: undefined }),
  }),
);

test('every chunk the mapping produces is encoded byte for byte as JSON.stringify would', () => {
  fc.assert(
    fc.property(fc.array(event, { maxLength: 30 }), text, fc.integer(), (events, id, created) => {
      const encode = chunkEncoder();
      let s: MapState = initialState({ id, created });
      const chunks = [];
      for (const [i, e] of events.entries()) {
        const r = mapEvent(s, { ...e, seq: i + 1 } as RunEvent);
        s = r.state;
        if (r.step.kind === 'write') chunks.push(...r.step.chunks);
      }
      const end = mapApiEnding(s, { reason: 'stream_severed', status: 502, message: 'gone' }).step;
      if (end.kind === 'write') chunks.push(...end.chunks);
      for (const c of chunks) assert.equal(encode(c), `data: ${JSON.stringify(c)}\n\n`);
    }),
    { numRuns: 2000 },
  );
});

test('a stream whose model changes mid-way gets the new model on the next text chunk', () => {
  const encode = chunkEncoder();
  const base = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk' as const,
    created: 7,
    choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }],
  };
  assert.equal(
    encode({ ...base, model: 'service/intern' }),
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"service/intern","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n',
  );
  assert.equal(
    encode({ ...base, model: 'local/scripted' }),
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"local/scripted","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n',
  );
});
