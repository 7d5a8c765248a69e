// The console's guards of what the gateway sends, by table: each shape it reads passes, and a
// field missing or of another type fails it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAgentList, isAnswer, isChunk, isErrorBody, isInteraction, isListing } from './wire.ts';

const call = { index: 0, id: 'c', type: 'function', function: { name: 'service.provide_input', arguments: '{}' } };
const tool = { id: 't', title: null, kind: 'execute', status: 'in_progress', input: 'ls', output: null };
const error = { code: 502, message: 'gone', metadata: { reason: 'stream_severed', retryable: true } };
const choice = (delta: object, finish_reason: string | null = null) => ({ index: 0, delta, finish_reason });

test('chunks: what an intern stream sends passes; a part of the wrong shape fails', () => {
  const cases: [unknown, boolean][] = [
    [
      { id: 'g', object: 'chat.completion.chunk', model: 'm', choices: [choice({ role: 'assistant', content: 'a' })] },
      true,
    ],
    [{ choices: [choice({ reasoning: 'r' })] }, true],
    [{ choices: [choice({ tool_calls: [call] }, 'tool_calls')] }, true],
    [{ model: 'service/intern', choices: [], session_id: 's', usage: null }, true],
    [{ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: 0.5 } }, true],
    [{ choices: [choice({}, 'error')], error }, true],
    [{ choices: [choice({})], cohort_tool: tool }, true],
    [null, false],
    ['chunk', false],
    [{}, false],
    [{ choices: {} }, false],
    [{ choices: [{ delta: {} }] }, false],
    [{ choices: [choice({ content: 5 })] }, false],
    [{ choices: [choice({ tool_calls: [{ ...call, function: { name: 'x' } }] })] }, false],
    [{ choices: [], usage: { prompt_tokens: '1', completion_tokens: 2, total_tokens: 3 } }, false],
    [{ choices: [choice({}, 'error')], error: { code: 502, message: 'gone' } }, false],
    [{ choices: [choice({})], cohort_tool: { ...tool, status: 'running' } }, false],
    [{ choices: [], model: 42 }, false],
    // An intern's turn ends only in these (docs/reference/intern-chat.md#stream-chunks).
    [{ choices: [choice({}, 'length')] }, false],
    [{ choices: [choice({ tool_calls: [{ ...call, function: { name: 'shell', arguments: '{}' } }] })] }, false],
  ];
  for (const [v, want] of cases) assert.equal(isChunk(v), want, JSON.stringify(v));
});

test('interactions, error bodies, answers, listings and agent lists', () => {
  const permission = { kind: 'permission', operation: 'shell', options: ['allow_once'] };
  const field = { name: 'n', type: 'string', required: true, options: [] };
  const entry = { name: 'a', type: 'file', size: 1, modified_at: 2 };
  const agent = { id: 'a', name: 'A', description: '', supports: { sessions: true, questions: true, steering: false } };
  const cases: [(v: unknown) => boolean, unknown, boolean][] = [
    [isInteraction, permission, true],
    [isInteraction, { ...permission, title: 'Run: ls', input: { command: 'ls' }, sandbox: 'inner' }, true],
    [isInteraction, { kind: 'elicitation', message: 'm', fields: [field, { ...field, title: 't' }] }, true],
    [isInteraction, { ...permission, options: 'allow_once' }, false],
    [isInteraction, { kind: 'elicitation', message: 'm', fields: [{ ...field, required: 'yes' }] }, false],
    [isInteraction, { kind: 'other' }, false],
    [isErrorBody, { error: { message: 'no', metadata: { reason: 'not_found', retryable: false } } }, true],
    [isErrorBody, { error: {} }, true],
    [isErrorBody, { error: { message: 42 } }, false],
    [isErrorBody, { message: 'no' }, false],
    [isAnswer, { action: 'accept', content: { n: 1 } }, true],
    [isAnswer, { action: 'decline' }, true],
    [isAnswer, { action: 'accept', content: 'x' }, false],
    [isAnswer, 'allow_once', false],
    [isListing, { path: '/', entries: [entry, { ...entry, type: 'directory', size: null }], truncated: false }, true],
    [isListing, { path: '/', entries: [{ ...entry, type: 'fifo' }], truncated: false }, false],
    [isListing, { path: '/', entries: [] }, false],
    [isAgentList, { data: [agent] }, true],
    [isAgentList, { data: [{ ...agent, supports: {} }] }, false],
    [isAgentList, [agent], false],
  ];
  for (const [guard, v, want] of cases) assert.equal(guard(v), want, `${guard.name} ${JSON.stringify(v)}`);
});
