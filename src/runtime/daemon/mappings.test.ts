// Pure mappings: ACP updates → run events, ACP requests → interactions, answers → ACP responses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fieldsToSchema, schemaToFields } from '../acp/index.ts';
import { eventsOf } from './updates.ts';
import { TOOL_TEXT_LIMIT } from '../../shared/daemon-protocol.ts';
import { decodeAnswer, fromElicitation, fromPermission, selfDriveConsent } from './interactions.ts';
import { EventLog } from './event-log.ts';

test('updates: a tool call and its updates map to tool events, input and output bounded', () => {
  assert.deepEqual(
    eventsOf(
      {
        sessionUpdate: 'tool_call',
        toolCallId: 't1',
        title: 'shell',
        kind: 'execute',
        status: 'in_progress',
        rawInput: { command: 'ls -l' },
      },
      null,
    ),
    [{ type: 'tool', id: 't1', title: 'shell', kind: 'execute', status: 'in_progress', input: 'ls -l', output: null }],
  );
  const long = 'x'.repeat(TOOL_TEXT_LIMIT + 10);
  assert.deepEqual(
    eventsOf(
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 't1',
        status: 'completed',
        content: [
          { type: 'content', content: { type: 'text', text: long } },
          { type: 'diff', path: '/w/a.ts', oldText: null, newText: 'x' },
        ],
      },
      null,
    ),
    [
      {
        type: 'tool',
        id: 't1',
        title: null,
        kind: null,
        status: 'completed',
        input: null,
        output: `…${`${long}\n(edited /w/a.ts)`.slice(-TOOL_TEXT_LIMIT)}`,
      },
    ],
  );
  assert.deepEqual(
    // An agent's status outside ACP's four is not passed on (the SDK does not validate updates for us).
    eventsOf(
      { sessionUpdate: 'tool_call_update', toolCallId: 't2', status: 'weird' as 'failed', rawInput: { path: 'a' } },
      null,
    ),
    [{ type: 'tool', id: 't2', title: null, kind: null, status: null, input: '{\n  "path": "a"\n}', output: null }],
  );
});

test('updates: text, reasoning and usage map to events; a new model is announced first', () => {
  const meta = { 'cohort/model': 'm1' };
  assert.deepEqual(
    eventsOf({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' }, _meta: meta }, null),
    [
      { type: 'model', model: 'm1' },
      { type: 'text', text: 'hi' },
    ],
  );
  assert.deepEqual(
    eventsOf({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hm' }, _meta: meta }, 'm1'),
    [{ type: 'reasoning', text: 'hm' }],
  );
  const usage = {
    prompt_tokens: 3,
    completion_tokens: 2,
    total_tokens: 5,
    cost: 0.1,
    prompt_tokens_details: { cached_tokens: 1 },
  };
  assert.deepEqual(
    eventsOf({ sessionUpdate: 'usage_update', used: 9, size: 100, _meta: { 'cohort/usage': usage } }, null),
    [{ type: 'usage', usage }],
  );
  assert.deepEqual(
    eventsOf({ sessionUpdate: 'usage_update', used: 9, size: 100, cost: { amount: 2, currency: 'EUR' } }, null),
    [{ type: 'usage', usage: { prompt_tokens: 9, completion_tokens: 0, total_tokens: 9 } }],
  );
  assert.deepEqual(eventsOf({ sessionUpdate: 'plan', entries: [] }, null), []);
  // Updates reach this unvalidated beyond their envelope: malformed ones produce nothing.
  const loose = (u: unknown) => eventsOf(u as Parameters<typeof eventsOf>[0], null);
  assert.deepEqual(loose({ sessionUpdate: 'agent_message_chunk' }), []);
  assert.deepEqual(loose({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 3 } }), []);
  assert.deepEqual(loose({ sessionUpdate: 'usage_update', used: 'many' }), []);
  // An empty chunk streams nothing.
  assert.deepEqual(eventsOf({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '' } }, null), []);
});

test("permission requests carry what will run: the title, the tool input, and where cohort's agent runs it", () => {
  const base = { sessionId: 's', options: [{ optionId: 'a', name: 'A', kind: 'allow_once' as const }] };
  const shell = fromPermission({
    ...base,
    toolCall: {
      toolCallId: 't',
      name: 'shell',
      title: 'Run outside the sandbox: rm x',
      rawInput: { command: 'rm x', escalate: true },
      _meta: { 'cohort/sandbox': 'escalated' },
    },
  });
  assert.deepEqual(shell.interaction, {
    kind: 'permission',
    operation: 'shell',
    options: ['allow_once'],
    title: 'Run outside the sandbox: rm x',
    input: { command: 'rm x', escalate: true },
    sandbox: 'escalated',
  });
  // Another agent's input passes as it is; a non-object input or an unknown place is null.
  const other = fromPermission({
    ...base,
    toolCall: { toolCallId: 't', title: 'Bash', rawInput: 'ls', _meta: { 'cohort/sandbox': 'elsewhere' } },
  });
  assert.deepEqual(other.interaction, {
    kind: 'permission',
    operation: null,
    options: ['allow_once'],
    title: 'Bash',
    input: null,
    sandbox: null,
  });
});

test('permission requests: offered kinds in order, the operation is the tool name', () => {
  const asked = fromPermission({
    sessionId: 's',
    toolCall: { toolCallId: 't', name: 'shell' },
    options: [
      { optionId: 'r', name: 'R', kind: 'reject_once' },
      { optionId: 'a', name: 'A', kind: 'allow_always' },
    ],
  });
  assert.deepEqual(asked.interaction, {
    kind: 'permission',
    operation: 'shell',
    options: ['reject_once', 'allow_always'],
    title: null,
    input: null,
    sandbox: null,
  });
  assert.deepEqual(decodeAnswer(asked, 'allow_always'), {
    ok: true,
    answer: { kind: 'permission', response: { outcome: { outcome: 'selected', optionId: 'a' } } },
    cancelRun: false,
  });
  assert.deepEqual(decodeAnswer(asked, 'cancel'), {
    ok: true,
    answer: { kind: 'permission', response: { outcome: { outcome: 'cancelled' } } },
    cancelRun: true,
  });
  assert.equal(decodeAnswer(asked, 'allow_once').ok, false);
  assert.deepEqual(selfDriveConsent(asked as Extract<typeof asked, { kind: 'permission' }>), {
    outcome: { outcome: 'selected', optionId: 'a' },
  });
});

test('questions: field descriptors survive the round trip through an ACP form schema', () => {
  const fields = [
    { name: 'colour', type: 'string', required: true, options: ['red', 'blue'] },
    { name: 'count', type: 'integer', required: false, options: [] },
    { name: 'tags', type: 'array', required: false, options: ['a', 'b'] },
    { name: 'ok', type: 'boolean', required: true, options: [] },
  ];
  assert.deepEqual(schemaToFields(fieldsToSchema(fields)), fields);
  const asked = fromElicitation({
    mode: 'form',
    sessionId: 's',
    message: 'Q?',
    requestedSchema: fieldsToSchema(fields),
  });
  assert.ok(asked);
  assert.deepEqual(asked.interaction, { kind: 'elicitation', message: 'Q?', fields });
  const accept = (content: unknown) => decodeAnswer(asked, JSON.stringify({ action: 'accept', content }));
  assert.deepEqual(accept({ colour: 'green', ok: true }), {
    ok: false,
    message: 'field colour must be string among red, blue',
  });
  assert.deepEqual(accept({ colour: 'red', ok: true, count: 1.5 }), {
    ok: false,
    message: 'field count must be integer',
  });
  assert.deepEqual(accept({ colour: 'red', ok: true, tags: ['c'] }), {
    ok: false,
    message: 'field tags must be array among a, b',
  });
  assert.deepEqual(accept({ colour: 'red', ok: true, extra: 1 }), { ok: false, message: 'unknown field extra' });
  assert.equal(accept({ colour: 'red', ok: false, count: 2, tags: ['a'] }).ok, true);
  assert.deepEqual(decodeAnswer(asked, '{"action":"decline"}'), {
    ok: true,
    answer: { kind: 'elicitation', response: { action: 'decline' } },
    cancelRun: false,
  });
  assert.deepEqual(decodeAnswer(asked, '{"action":"maybe"}'), {
    ok: false,
    message: 'action must be accept, decline or cancel',
  });
  assert.equal(
    fromElicitation({ mode: 'url', sessionId: 's', message: 'go', elicitationId: 'e', url: 'https://x' }),
    null,
  );
});

test('event log: seq increases; replay from a dropped point is refused', () => {
  const log = new EventLog(3);
  for (let i = 0; i < 5; i++) log.append({ type: 'text', text: String(i) });
  assert.equal(log.lastSeq, 5);
  assert.deepEqual(
    log.since(2)?.map((e) => e.seq),
    [3, 4, 5],
  );
  assert.equal(log.since(1), null);
  assert.deepEqual(log.since(5), []);
});
