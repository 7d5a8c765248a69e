import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, parseLine, words, cutChars, type ScriptMessage, type Plan } from './scripted.ts';

const tools = [{ function: { name: 'shell' } }, { function: { name: 'ask_user' } }, { function: { name: 'lookup' } }];
const user = (content: string): ScriptMessage => ({ role: 'user', content });

function ok(p: Plan) {
  assert.equal(p.kind, 'ok');
  return p as Extract<Plan, { kind: 'ok' }>;
}
const text = (p: Plan) => ok(p).steps.filter((s) => s.type === 'content').map((s) => (s as { text: string }).text).join('');

test('a message with no directive is echoed', () => {
  const p = ok(plan({ messages: [user('hello there')] }));
  assert.equal(text(p), 'You said: hello there');
  assert.deepEqual(p.steps.map((s) => s.type), ['content', 'content', 'content', 'content']);
  assert.equal(p.finish, 'stop');
  assert.deepEqual(p.usage, { prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
});

test('/say streams a word at a time; lines are separated by newlines; plain lines are said', () => {
  const p = ok(plan({ messages: [user('/say hello big world\nplain line\n/think hmm ok')] }));
  assert.deepEqual(p.steps, [
    { type: 'content', text: 'hello' },
    { type: 'content', text: ' big' },
    { type: 'content', text: ' world' },
    { type: 'content', text: '\nplain' },
    { type: 'content', text: ' line' },
    { type: 'reasoning', text: 'hmm' },
    { type: 'reasoning', text: ' ok' },
  ]);
});

test('/sleep, /repeat and /fail', () => {
  const p = ok(plan({ messages: [user('/sleep 20\n/repeat 3 ab')] }));
  assert.deepEqual(p.steps, [{ type: 'sleep', ms: 20 }, { type: 'content', text: 'ab' }, { type: 'content', text: 'ab' }, { type: 'content', text: 'ab' }]);
  assert.deepEqual(plan({ messages: [user('/fail 503')] }), { kind: 'fail', status: 503 });
});

test('/shell ends the response with a tool call, the next response resumes after it', () => {
  const first = ok(plan({ messages: [user('/say before\n/shell echo hi\n/say after')], tools }));
  assert.equal(first.finish, 'tool_calls');
  const call = first.steps.at(-1) as Extract<typeof first.steps[number], { type: 'tool_call' }>;
  assert.equal(call.name, 'shell');
  assert.equal(call.arguments, '{"command":"echo hi"}');
  const second = ok(
    plan({
      tools,
      messages: [
        user('/say before\n/shell echo hi\n/say after'),
        { role: 'assistant', content: 'before', tool_calls: [{ id: call.id, function: { name: 'shell', arguments: call.arguments } }] },
        { role: 'tool', tool_call_id: call.id, content: 'hi\n' },
      ],
    }),
  );
  assert.equal(text(second), 'shell: hi\n\nafter');
  assert.equal(second.finish, 'stop');
});

test('the tool result is cut at 500 characters, never inside a surrogate pair', () => {
  const resultOf = (content: string) =>
    text(
      plan({
        tools,
        messages: [
          user('/shell x'),
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'shell', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content },
        ],
      }),
    );
  const table: [result: string, said: string][] = [
    ['x'.repeat(499) + '😀😀😀', 'shell: ' + 'x'.repeat(499) + '😀'],
    ['😀'.repeat(501), 'shell: ' + '😀'.repeat(500)],
    ['x'.repeat(501), 'shell: ' + 'x'.repeat(500)],
    ['short', 'shell: short'],
  ];
  for (const [result, said] of table) assert.equal(resultOf(result), said);
});

test('steered user messages are noted first', () => {
  const p = ok(
    plan({
      tools,
      messages: [
        user('/ask name?\n/say bye'),
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'ask_user', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: '{"answer":"Ann"}' },
        user('hurry up'),
      ],
    }),
  );
  assert.equal(text(p), 'Noted: hurry up\nask_user: {"answer":"Ann"}\nbye');
});

test('a tool the request does not offer is refused in text', () => {
  const p = ok(plan({ messages: [user('/tool nope {}\n/say unreachable')], tools }));
  assert.equal(text(p), 'Tool nope is not available.');
  assert.equal(p.finish, 'stop');
});

test('a later turn opens after an assistant message without tool calls', () => {
  const p = ok(plan({ messages: [user('/say one'), { role: 'assistant', content: 'one' }, user('second')] }));
  assert.equal(text(p), 'You said: second');
});

test('cutChars counts code points', () => {
  const table: [text: string, limit: number, cut: string][] = [
    ['abc', 2, 'ab'],
    ['a😀b', 2, 'a😀'],
    ['😀😀', 1, '😀'],
    ['ab', 5, 'ab'],
    ['', 3, ''],
  ];
  for (const [t, limit, cut] of table) assert.equal(cutChars(t, limit), cut, t);
});

test('parseLine and words', () => {
  assert.deepEqual(parseLine('/ask Your name?'), {
    kind: 'tool',
    name: 'ask_user',
    args: '{"message":"Your name?","fields":[{"name":"answer","type":"string","required":true}]}',
  });
  assert.deepEqual(parseLine('/sleep soon'), { kind: 'say', text: '/sleep soon' });
  assert.deepEqual(words('a  b', true), ['\na', '  b']);
});
