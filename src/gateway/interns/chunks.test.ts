// Row by row: the run states, event order and statuses of docs/reference/intern-chat.md as the pure
// mapping gives them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { initialState, mapApiEnding, mapEvent, SERVICE_MODEL, type MapState, type Step } from './chunks.ts';
import type { RunEvent } from '../../shared/daemon-protocol.ts';
import { InternChunk } from './chat.schemas.ts';

type Ev = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, 'seq'> : never) : never;
const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
const start: Ev[] = [{ type: 'run', run_id: 'r1', session_id: 's1', approval_mode: 'self-drive' }];

function feed(events: Ev[], s: MapState = initialState({ id: 'c1', created: 100 })) {
  const steps: Step[] = [];
  events.forEach((e, i) => {
    const r = mapEvent(s, { ...e, seq: i + 1 } as RunEvent);
    s = r.state;
    steps.push(r.step);
  });
  const chunks = steps.flatMap((st) => (st.kind === 'write' ? st.chunks : []));
  for (const c of chunks) InternChunk.parse(c);
  return { s, steps, chunks, last: steps.at(-1)! };
}
const deltas = (chunks: InternChunk[]) =>
  chunks.map((c) =>
    c.choices[0]
      ? { ...c.choices[0].delta, finish: c.choices[0].finish_reason, model: c.model }
      : { final: true, session_id: c.session_id, usage: c.usage, model: c.model },
  );

describe('daemon events to chunks', () => {
  test('bookkeeping events write nothing before the first output (the status is still open)', () => {
    const { steps } = feed([
      ...start,
      { type: 'model', model: 'local/scripted' },
      { type: 'usage', usage },
      { type: 'steered', text: 'x' },
    ]);
    assert.deepEqual(
      steps.map((s) => s.kind),
      ['hold', 'hold', 'hold', 'hold'],
    );
  });

  test('tool calls: nothing without the opt-in; with it, cohort_tool chunks with an empty delta', () => {
    const tool: Ev = {
      type: 'tool',
      id: 'call_1',
      title: 'shell',
      kind: 'execute',
      status: 'in_progress',
      input: 'ls',
      output: null,
    };
    const done: Ev = { ...tool, title: null, kind: null, input: null, status: 'completed', output: 'a.txt' };
    const plain = feed([...start, tool, done, { type: 'text', text: 'hi' }]);
    assert.deepEqual(
      plain.steps.map((s) => s.kind),
      ['hold', 'hold', 'hold', 'write'],
    );
    assert.ok(plain.chunks.every((c) => c.cohort_tool === undefined));
    const asked = feed(
      [...start, tool, done, { type: 'text', text: 'hi' }],
      initialState({ id: 'c1', created: 100, toolEvents: true }),
    );
    assert.deepEqual(
      asked.chunks.map((c) => [c.choices[0]?.delta, c.cohort_tool]),
      [
        [{ role: 'assistant' }, undefined],
        [{}, { id: 'call_1', title: 'shell', kind: 'execute', status: 'in_progress', input: 'ls', output: null }],
        [{}, { id: 'call_1', title: null, kind: null, status: 'completed', input: null, output: 'a.txt' }],
        [{ content: 'hi' }, undefined],
      ],
    );
  });

  test('run states: running → completed: role, content, reasoning, stop, final with session and usage; one id', () => {
    const { chunks, last } = feed([
      ...start,
      { type: 'model', model: 'm/1' },
      { type: 'reasoning', text: 'hm' },
      { type: 'text', text: 'hi' },
      { type: 'completed', stop_reason: 'end_turn', usage, model: 'm/2' },
    ]);
    assert.deepEqual(deltas(chunks), [
      { role: 'assistant', finish: null, model: 'm/1' },
      { reasoning: 'hm', finish: null, model: 'm/1' },
      { content: 'hi', finish: null, model: 'm/1' },
      { finish: 'stop', model: 'm/2' },
      { final: true, session_id: 's1', usage, model: 'm/2' },
    ]);
    assert.deepEqual(new Set(chunks.map((c) => c.id)), new Set(['c1']));
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.created === 100));
    assert.deepEqual(last, { kind: 'write', chunks: chunks.slice(-2), end: true });
  });

  test('completed without any reported usage or model: final usage null, model service/intern', () => {
    const { chunks } = feed([...start, { type: 'completed', stop_reason: 'end_turn', usage: null, model: null }]);
    assert.deepEqual(deltas(chunks), [
      { role: 'assistant', finish: null, model: SERVICE_MODEL },
      { finish: 'stop', model: SERVICE_MODEL },
      { final: true, session_id: 's1', usage: null, model: SERVICE_MODEL },
    ]);
  });

  test('completed with no usage on the event keeps the last usage event', () => {
    const { chunks } = feed([
      ...start,
      { type: 'text', text: 'a' },
      { type: 'usage', usage },
      { type: 'completed', stop_reason: 'end_turn', usage: null, model: null },
    ]);
    assert.deepEqual(chunks.at(-1)!.usage, usage);
  });

  test('run states: running → paused: one tool call, finish tool_calls, final with usage null, end', () => {
    const interaction = {
      kind: 'permission' as const,
      operation: 'shell',
      options: ['allow_once' as const, 'reject_once' as const],
      title: null,
      input: null,
      sandbox: null,
    };
    const { chunks, last } = feed([
      ...start,
      { type: 'text', text: 'let me' },
      { type: 'usage', usage },
      { type: 'interaction', interaction_id: 'i1', interaction, deadline_at: 'x' },
    ]);
    assert.equal(last.kind === 'write' && last.end, true);
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.deepEqual(calls, [
      {
        index: 0,
        id: 'i1',
        type: 'function',
        function: { name: 'service.provide_input', arguments: JSON.stringify(interaction) },
      },
    ]);
    assert.deepEqual(deltas(chunks.slice(-2)), [
      { finish: 'tool_calls', model: SERVICE_MODEL },
      { final: true, session_id: 's1', usage: null, model: SERVICE_MODEL },
    ]);
  });

  test('elicitation arguments are the question shape', () => {
    const interaction = {
      kind: 'elicitation' as const,
      message: 'Name?',
      fields: [{ name: 'name', type: 'string', required: true, options: [] }],
    };
    const { chunks } = feed([...start, { type: 'interaction', interaction_id: 'q', interaction, deadline_at: 'x' }]);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.deepEqual(JSON.parse(chunks[1]!.choices[0]!.delta.tool_calls![0]!.function.arguments), interaction);
  });

  test('statuses: turn_failed before output is a status with the intern’s classification and Retry-After', () => {
    for (const retryable of [true, false]) {
      const { last } = feed([
        ...start,
        {
          type: 'failed',
          reason: 'turn_failed',
          status: 502,
          message: 'upstream 429',
          retryable,
          before_output: true,
          usage: null,
        },
      ]);
      assert.deepEqual(last, {
        kind: 'refuse',
        refusal: { status: 502, reason: 'turn_failed', message: 'upstream 429', retryable, retryAfter: undefined },
      });
    }
    const busy = feed([
      ...start,
      {
        type: 'failed',
        reason: 'busy',
        status: 503,
        message: 'full',
        retryable: true,
        before_output: true,
        retry_after_seconds: 5,
        usage: null,
      },
    ]);
    assert.deepEqual(busy.last, {
      kind: 'refuse',
      refusal: { status: 503, reason: 'busy', message: 'full', retryable: true, retryAfter: 5 },
    });
  });

  test('run states: failure after the 200: error chunk with the error object, final with usage, end; severed and timeout chunks carry service/intern', () => {
    const rows = [
      { reason: 'turn_failed', status: 502, retryable: false, model: 'm/1' },
      { reason: 'stream_severed', status: 502, retryable: true, model: SERVICE_MODEL },
      { reason: 'timeout', status: 504, retryable: true, model: SERVICE_MODEL },
    ] as const;
    for (const row of rows) {
      const { chunks, last } = feed([
        ...start,
        { type: 'model', model: 'm/1' },
        { type: 'text', text: 'a' },
        {
          type: 'failed',
          reason: row.reason,
          status: row.status,
          message: 'agent exited',
          retryable: false,
          before_output: false,
          usage,
        },
      ]);
      assert.equal(last.kind === 'write' && last.end, true);
      const err = chunks.at(-2)!;
      assert.deepEqual(err.choices, [{ index: 0, delta: {}, finish_reason: 'error' }]);
      assert.deepEqual(
        err.error,
        { code: row.status, message: 'agent exited', metadata: { reason: row.reason, retryable: row.retryable } },
        row.reason,
      );
      assert.equal(err.model, row.model, row.reason);
      assert.deepEqual(deltas([chunks.at(-1)!]), [{ final: true, session_id: 's1', usage, model: row.model }]);
    }
  });

  test('run states: ended confirmed by the intern: 410 run_ended error chunk from the API, then final', () => {
    for (const pre of [[], [{ type: 'text', text: 'a' }]] as Ev[][]) {
      const { chunks } = feed([
        ...start,
        { type: 'model', model: 'm/1' },
        ...pre,
        { type: 'ended', cause: 'cancelled', message: 'cancelled', usage: null },
      ]);
      assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
      assert.deepEqual(chunks.at(-2)!.error, {
        code: 410,
        message: 'cancelled',
        metadata: { reason: 'run_ended', retryable: false },
      });
      assert.equal(chunks.at(-2)!.model, SERVICE_MODEL);
      assert.deepEqual(deltas([chunks.at(-1)!]), [
        { final: true, session_id: 's1', usage: null, model: SERVICE_MODEL },
      ]);
    }
  });

  test('run states: connection breaks: stream_severed error chunk after output; 502 status before', () => {
    let { s } = feed([...start, { type: 'text', text: 'a' }, { type: 'usage', usage }]);
    const after = mapApiEnding(s, { reason: 'stream_severed', status: 502, message: 'lost' });
    assert.ok(after.step.kind === 'write' && after.step.end);
    const chunks = after.step.kind === 'write' ? after.step.chunks : [];
    assert.deepEqual(chunks[0]!.error, {
      code: 502,
      message: 'lost',
      metadata: { reason: 'stream_severed', retryable: true },
    });
    assert.deepEqual(deltas([chunks[1]!]), [{ final: true, session_id: 's1', usage, model: SERVICE_MODEL }]);
    s = feed(start).s;
    assert.deepEqual(mapApiEnding(s, { reason: 'stream_severed', status: 502, message: 'lost' }).step, {
      kind: 'refuse',
      refusal: { reason: 'stream_severed', status: 502, message: 'lost', retryable: true },
    });
  });

  test('turn budget: 504 timeout error chunk (retryable) after output, 504 status before', () => {
    const { s } = feed([...start, { type: 'text', text: 'a' }]);
    const r = mapApiEnding(s, { reason: 'timeout', status: 504, message: 'budget' });
    assert.deepEqual(r.step.kind === 'write' && r.step.chunks[0]!.error, {
      code: 504,
      message: 'budget',
      metadata: { reason: 'timeout', retryable: true },
    });
    assert.equal(
      mapApiEnding(initialState({ id: 'x', created: 1 }), { reason: 'timeout', status: 504, message: 'b' }).step.kind,
      'refuse',
    );
  });

  test('nothing is written after the end', () => {
    const { s } = feed([...start, { type: 'completed', stop_reason: 'end_turn', usage: null, model: null }]);
    assert.deepEqual(mapEvent(s, { seq: 9, type: 'text', text: 'late' }).step, {
      kind: 'write',
      chunks: [],
      end: false,
    });
    assert.deepEqual(mapApiEnding(s, { reason: 'stream_severed', status: 502, message: 'x' }).step, {
      kind: 'write',
      chunks: [],
      end: false,
    });
  });
});
