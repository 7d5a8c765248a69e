import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  plan,
  parseLine,
  words,
  cutChars,
  countWords,
  MAX_REPEATS,
  MAX_REPEAT_CHARS,
  MAX_SLEEP_MS,
  type ScriptMessage,
  type Plan,
  type Step,
} from './scripted.ts';

const tools = [{ function: { name: 'shell' } }, { function: { name: 'ask_user' } }, { function: { name: 'lookup' } }];
const user = (content: string): ScriptMessage => ({ role: 'user', content });

function ok(p: Plan) {
  assert.equal(p.kind, 'ok');
  return p as Extract<Plan, { kind: 'ok' }>;
}
/** What a step adds to the text or the reasoning, a repeat's chunks built out. */
const played = (s: Step, kind: 'content' | 'reasoning') =>
  s.type === kind ? s.text : kind === 'content' && s.type === 'repeat' ? s.first + s.rest.repeat(s.n - 1) : '';
const produced = (p: Plan, kind: 'content' | 'reasoning') =>
  ok(p)
    .steps.map((s) => played(s, kind))
    .join('');
const text = (p: Plan) => produced(p, 'content');
const saying = (t: string): Step[] => words(t, false).map((w) => ({ type: 'content', text: w }));
const limits = {
  repeat: `/repeat is limited to ${MAX_REPEATS} repetitions and ${MAX_REPEAT_CHARS} characters a response.`,
  sleep: `/sleep is limited to ${MAX_SLEEP_MS} ms a response.`,
};

test('a message with no directive is echoed', () => {
  const p = ok(plan({ messages: [user('hello there')] }));
  assert.equal(text(p), 'You said: hello there');
  assert.deepEqual(
    p.steps.map((s) => s.type),
    ['content', 'content', 'content', 'content'],
  );
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
  assert.deepEqual(p.steps, [
    { type: 'sleep', ms: 20 },
    { type: 'repeat', n: 3, first: 'ab', rest: ' ab' },
  ]);
  assert.equal(text(p), 'ab ab ab');
  assert.deepEqual(plan({ messages: [user('/fail 503')] }), { kind: 'fail', status: 503 });
});

test('/think lines, like text lines, start on a new line; /repeat chunks are spaced and follow the text on a new line', () => {
  const p = ok(
    plan({ messages: [user('/think one two\n/think three four\n/say a\n/repeat 2 x\n/say b\n/repeat 0 y')] }),
  );
  assert.deepEqual(p.steps, [
    { type: 'reasoning', text: 'one' },
    { type: 'reasoning', text: ' two' },
    { type: 'reasoning', text: '\nthree' },
    { type: 'reasoning', text: ' four' },
    { type: 'content', text: 'a' },
    { type: 'repeat', n: 2, first: '\nx', rest: ' x' },
    { type: 'content', text: '\nb' },
  ]);
});

test('the completion tokens are the whitespace-separated words of what is produced', () => {
  const table: [script: string, content: string, reasoning: string, tokens: number][] = [
    ['/think one two\n/think three four\n/say a\n/repeat 2 x\n/say b', 'a\nx x\nb', 'one two\nthree four', 8],
    ['/say hi\n/repeat 3 ab cd\n/say end', 'hi\nab cd ab cd ab cd\nend', '', 8],
    ['/repeat 2 x\n/repeat 2 y', 'x x\ny y', '', 4],
    ['/say a\n/sleep 700000\n/say b', `a\n${limits.sleep}`, '', 1 + countWords(limits.sleep)],
  ];
  for (const [script, content, reasoning, tokens] of table) {
    const p = ok(plan({ messages: [user(script)] }));
    assert.equal(text(p), content, script);
    assert.equal(produced(p, 'reasoning'), reasoning, script);
    assert.equal(countWords(content) + countWords(reasoning), tokens, script);
    assert.equal(p.usage.completion_tokens, tokens, script);
  }
});

test('/repeat up to its limits is one step whatever N, its words counted; beyond them it is refused in text and the response stops', () => {
  const x10 = 'x'.repeat(10);
  const emoji10 = '😀'.repeat(10);
  const table: [script: string, steps: Step[], tokens: number][] = [
    [
      `/repeat ${MAX_REPEATS} ab cd`,
      [{ type: 'repeat', n: MAX_REPEATS, first: 'ab cd', rest: ' ab cd' }],
      2 * MAX_REPEATS,
    ],
    [`/repeat ${MAX_REPEATS + 1} x\n/say after`, saying(limits.repeat), countWords(limits.repeat)],
    [`/repeat 99999999999999999999999 x`, saying(limits.repeat), countWords(limits.repeat)],
    [`/repeat ${MAX_REPEATS} ${x10}`, [{ type: 'repeat', n: MAX_REPEATS, first: x10, rest: ` ${x10}` }], MAX_REPEATS],
    // The characters are counted as code points: ten emoji are ten characters.
    [
      `/repeat ${MAX_REPEATS} ${emoji10}`,
      [{ type: 'repeat', n: MAX_REPEATS, first: emoji10, rest: ` ${emoji10}` }],
      MAX_REPEATS,
    ],
  ];
  for (const [script, steps, tokens] of table) {
    const p = ok(plan({ messages: [user(script)] }));
    assert.deepEqual(p.steps, steps, script);
    assert.equal(p.usage.completion_tokens, tokens, script);
    assert.equal(p.finish, 'stop');
  }
});

test('the /repeat character limit is for the whole response', () => {
  const x10 = 'x'.repeat(10);
  const half = `/repeat ${MAX_REPEATS / 2} ${x10}`;
  const halfText = x10 + ` ${x10}`.repeat(MAX_REPEATS / 2 - 1);
  const table: [script: string, text: string][] = [
    [`/repeat ${MAX_REPEATS} ${'x'.repeat(11)}\n/say after`, limits.repeat],
    [`/repeat ${MAX_REPEATS} ${'😀'.repeat(11)}`, limits.repeat],
    [`/say a\n${half}\n${half}\n/say b`, `a\n${halfText}\n${halfText}\nb`],
    [`/say a\n${half}\n${half}\n/repeat 1 y\n/say b`, `a\n${halfText}\n${halfText}\n${limits.repeat}`],
    // Repetitions count over the response too: one-character lines that stay far under the character bound.
    [
      `/repeat ${MAX_REPEATS / 2} x\n/repeat ${MAX_REPEATS / 2} x\n/repeat 1 x`,
      `x${' x'.repeat(MAX_REPEATS / 2 - 1)}\nx${' x'.repeat(MAX_REPEATS / 2 - 1)}\n${limits.repeat}`,
    ],
  ];
  // Compared without assert.equal's diff, which would print a megabyte.
  for (const [script, expected] of table)
    assert.ok(text(plan({ messages: [user(script)] })) === expected, script.slice(0, 40));
});

test('/sleep is bounded: beyond the bound it is refused in text and the response stops', () => {
  const table: [script: string, steps: Step[]][] = [
    [`/sleep ${MAX_SLEEP_MS}`, [{ type: 'sleep', ms: MAX_SLEEP_MS }]],
    // 2^31 ms would overflow setTimeout into a 1 ms wait.
    [`/say a\n/sleep ${2 ** 31}\n/say b`, saying(`a\n${limits.sleep}`)],
    [`/sleep ${MAX_SLEEP_MS + 1}`, saying(limits.sleep)],
    // The bound is the response's total, not each line's.
    [
      `/sleep ${MAX_SLEEP_MS / 2}\n/sleep ${MAX_SLEEP_MS / 2}`,
      [
        { type: 'sleep', ms: MAX_SLEEP_MS / 2 },
        { type: 'sleep', ms: MAX_SLEEP_MS / 2 },
      ],
    ],
    [
      `/sleep ${MAX_SLEEP_MS / 2}\n/sleep ${MAX_SLEEP_MS / 2}\n/sleep 1\n/say b`,
      [{ type: 'sleep', ms: MAX_SLEEP_MS / 2 }, { type: 'sleep', ms: MAX_SLEEP_MS / 2 }, ...saying(limits.sleep)],
    ],
  ];
  for (const [script, steps] of table) assert.deepEqual(ok(plan({ messages: [user(script)] })).steps, steps, script);
});

test('/shell ends the response with a tool call, the next response resumes after it', () => {
  const first = ok(plan({ messages: [user('/say before\n/shell echo hi\n/say after')], tools }));
  assert.equal(first.finish, 'tool_calls');
  const call = first.steps.at(-1) as Extract<(typeof first.steps)[number], { type: 'tool_call' }>;
  assert.equal(call.name, 'shell');
  assert.equal(call.arguments, '{"command":"echo hi"}');
  const second = ok(
    plan({
      tools,
      messages: [
        user('/say before\n/shell echo hi\n/say after'),
        {
          role: 'assistant',
          content: 'before',
          tool_calls: [{ id: call.id, function: { name: 'shell', arguments: call.arguments } }],
        },
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
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', function: { name: 'shell', arguments: '{}' } }],
          },
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
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', function: { name: 'ask_user', arguments: '{}' } }],
        },
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
  assert.deepEqual(parseLine('/repeat 3'), { kind: 'say', text: '/repeat 3' });
  assert.deepEqual(parseLine('/repeat 3 a b'), { kind: 'repeat', n: 3, text: 'a b' });
  assert.deepEqual(words('a  b', true), ['\na', '  b']);
});

test("an agent's <system-reminder> blocks are not part of the script (Claude Code sends one before each prompt)", () => {
  const reminder = '<system-reminder>\nAs you answer the user, use the following context: …\n</system-reminder>\n';
  assert.equal(text(plan({ messages: [user(`${reminder}Please run it.\n/say done`)] })), 'Please run it.\ndone');
  const parts: ScriptMessage = {
    role: 'user',
    content: [
      { type: 'text', text: reminder },
      { type: 'text', text: '/say from the second block' },
    ],
  };
  assert.equal(text(plan({ messages: [parts] })), 'from the second block');
  // A message that is nothing but context opens no turn: there is nothing to answer.
  assert.equal(text(plan({ messages: [user('<system-reminder>x</system-reminder>')] })), '');
});

test("an agent's context messages (Codex's <environment_context>) are not the turn's opener", () => {
  const ctx: ScriptMessage = {
    role: 'user',
    content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/intern/work</cwd>\n</environment_context>' }],
  };
  assert.equal(
    text(plan({ messages: [{ role: 'developer', content: 'rules' }, ctx, user('/say from codex')] })),
    'from codex',
  );
  // The next turn: its opener follows the assistant's answer, context or not.
  const next = plan({
    messages: [ctx, user('/say one'), { role: 'assistant', content: 'one' }, ctx, user('/say two')],
  });
  assert.equal(text(next), 'two');
});
