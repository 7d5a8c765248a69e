// A chat request's transcript entries from its run events, event by event, and its bounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunEvent } from '../../shared/daemon-protocol.ts';
import {
  ENTRY_TEXT_LIMIT,
  MAX_CHARS,
  MAX_ENTRIES,
  TOOL_SUMMARY_LIMIT,
  newDraft,
  recordEnd,
  recordEvent,
  recordRequest,
} from './transcript.ts';

const tool = (id: string, over: Partial<Extract<RunEvent, { type: 'tool' }>> = {}): RunEvent => ({
  seq: 9,
  type: 'tool',
  id,
  title: null,
  kind: null,
  status: null,
  input: null,
  output: null,
  ...over,
});
const noEnd = { finishReason: 'stop', error: null, model: 'local/scripted', usage: null };

test('a turn: the prompt, text joined, a tool call merged across its events, text after it, the end', () => {
  const d = newDraft();
  recordRequest(d, 1, { prompt: 'list files', mode: 'manual' });
  const events: RunEvent[] = [
    { seq: 1, type: 'run', run_id: 'r', session_id: 's', approval_mode: 'self-drive' },
    { seq: 2, type: 'model', model: 'local/scripted' },
    { seq: 3, type: 'reasoning', text: 'think' },
    { seq: 4, type: 'text', text: 'I will ' },
    { seq: 5, type: 'text', text: 'run ls' },
    tool('t1', { title: 'ls', kind: 'execute', status: 'pending', input: '{"command":"ls"}' }),
    { seq: 7, type: 'usage', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } },
    tool('t1', { status: 'completed', output: 'a\nb\n' }),
    { seq: 9, type: 'steered', text: 'and hidden ones' },
    { seq: 10, type: 'text', text: 'Done.' },
  ];
  for (const [i, e] of events.entries()) recordEvent(d, 10 + i, e);
  const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
  const entries = recordEnd(d, 99, { ...noEnd, usage });
  assert.deepEqual(entries, [
    { at: 1, body: { type: 'user', content: 'list files', approval_mode: 'manual', steered: false, truncated: false } },
    { at: 12, body: { type: 'reasoning', content: 'think', truncated: false } },
    { at: 13, body: { type: 'assistant', content: 'I will run ls', truncated: false } },
    {
      at: 15,
      body: {
        type: 'tool',
        tool: {
          id: 't1',
          title: 'ls',
          kind: 'execute',
          status: 'completed',
          input: '{"command":"ls"}',
          output: 'a\nb\n',
        },
      },
    },
    {
      at: 18,
      body: { type: 'user', content: 'and hidden ones', approval_mode: null, steered: true, truncated: false },
    },
    { at: 19, body: { type: 'assistant', content: 'Done.', truncated: false } },
    { at: 99, body: { type: 'end', finish_reason: 'stop', model: 'local/scripted', usage, omitted: 0 } },
  ]);
});

test('a pause, its answer in the next request, and an error ending', () => {
  const interaction = { kind: 'elicitation' as const, message: 'name?', fields: [] };
  const a = newDraft();
  recordRequest(a, 1, { prompt: 'ask me', mode: 'self-drive' });
  recordEvent(a, 2, { seq: 2, type: 'interaction', interaction_id: 'q1', interaction, deadline_at: 'x' });
  assert.deepEqual(recordEnd(a, 3, { ...noEnd, finishReason: 'tool_calls', model: null }).slice(1), [
    { at: 2, body: { type: 'interaction', interaction_id: 'q1', interaction } },
    { at: 3, body: { type: 'end', finish_reason: 'tool_calls', model: null, usage: null, omitted: 0 } },
  ]);
  const b = newDraft();
  recordRequest(b, 4, { interactionId: 'q1', answer: '{"action":"decline"}' });
  const error = { code: 502, reason: 'turn_failed', message: 'the model failed' };
  assert.deepEqual(recordEnd(b, 5, { finishReason: 'error', error, model: null, usage: null }), [
    { at: 4, body: { type: 'answer', interaction_id: 'q1', content: '{"action":"decline"}', truncated: false } },
    { at: 5, body: { type: 'error', error } },
    { at: 5, body: { type: 'end', finish_reason: 'error', model: null, usage: null, omitted: 0 } },
  ]);
  // The caller left: no finish reason.
  const c = newDraft();
  recordRequest(c, 6, { prompt: 'x', mode: 'self-drive' });
  assert.deepEqual(recordEnd(c, 7, { ...noEnd, finishReason: null }).at(-1), {
    at: 7,
    body: { type: 'end', finish_reason: null, model: 'local/scripted', usage: null, omitted: 0 },
  });
  // A finish reason the API does not give counts as none.
  assert.deepEqual(recordEnd(newDraft(), 8, { ...noEnd, finishReason: 'length' }).at(-1), {
    at: 8,
    body: { type: 'end', finish_reason: null, model: 'local/scripted', usage: null, omitted: 0 },
  });
});

test('bounds: a text keeps its head, a tool its input head and output tail, a request its first entries and characters', () => {
  const d = newDraft();
  recordRequest(d, 1, { prompt: 'p', mode: 'self-drive' });
  recordEvent(d, 2, { seq: 2, type: 'text', text: 'a'.repeat(ENTRY_TEXT_LIMIT - 1) });
  recordEvent(d, 2, { seq: 3, type: 'text', text: 'bc' });
  recordEvent(d, 2, { seq: 4, type: 'text', text: 'more' });
  const text = d.entries[1]!.body as { content: string; truncated: boolean };
  assert.equal(text.content, `${'a'.repeat(ENTRY_TEXT_LIMIT - 1)}b`);
  assert.equal(text.truncated, true);
  recordEvent(
    d,
    3,
    tool('t', { input: `<${'i'.repeat(TOOL_SUMMARY_LIMIT)}`, output: `${'o'.repeat(TOOL_SUMMARY_LIMIT)}>` }),
  );
  const t = (d.entries[2]!.body as { tool: { input: string; output: string } }).tool;
  assert.equal(t.input.length, TOOL_SUMMARY_LIMIT);
  assert.ok(t.input.startsWith('<'));
  assert.ok(t.output.endsWith('>') && t.output.length === TOOL_SUMMARY_LIMIT);

  // Many tool calls: the first MAX_ENTRIES entries kept, the rest counted on the end entry.
  for (let i = 0; i < MAX_ENTRIES + 50; i++) recordEvent(d, 4, tool(`n${i}`, { title: `call ${i}` }));
  // A later event of a call that was not kept adds nothing.
  recordEvent(d, 5, tool(`n${MAX_ENTRIES + 10}`, { status: 'completed' }));
  const entries = recordEnd(d, 6, noEnd);
  assert.equal(entries.length, MAX_ENTRIES + 1);
  assert.deepEqual(entries.at(-1)?.body, {
    type: 'end',
    finish_reason: 'stop',
    model: 'local/scripted',
    usage: null,
    omitted: 53,
  });

  // The request's characters: past MAX_CHARS, new texts are empty and marked.
  const big = newDraft();
  for (let i = 0; i < MAX_CHARS / ENTRY_TEXT_LIMIT + 2; i++) {
    recordEvent(big, i, { seq: i + 1, type: 'text', text: 'x'.repeat(ENTRY_TEXT_LIMIT) });
    recordEvent(big, i, tool(`b${i}`));
  }
  const texts = big.entries
    .filter((e) => e.body.type === 'assistant')
    .map((e) => e.body as { content: string; truncated: boolean });
  assert.equal(
    texts.reduce((n, x) => n + x.content.length, 0),
    MAX_CHARS,
  );
  assert.deepEqual(texts.at(-1), { type: 'assistant', content: '', truncated: true });
});
