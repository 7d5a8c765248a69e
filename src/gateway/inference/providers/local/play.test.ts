// Playing a plan: a /repeat streams its chunks one by one without being built up front, and a
// completion keeps the order of its text and reasoning for an Anthropic message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { completion, streamChunks, type OkPlan } from './play.ts';
import { plan } from './scripted.ts';
import { PARTS } from '../../types.ts';

const planOf = (script: string) => plan({ messages: [{ role: 'user', content: script }] }) as OkPlan;

test('a /repeat streams N chunks: the first on a new line after earlier text, the rest after a space', async () => {
  const deltas = [];
  for await (const c of streamChunks(planOf('/say a\n/repeat 3 xy z\n/say b'), { id: 'g', created: 1 }))
    deltas.push(c.choices[0]!.delta);
  assert.deepEqual(deltas, [
    { role: 'assistant', content: '' },
    { content: 'a' },
    { content: '\nxy z' },
    { content: ' xy z' },
    { content: ' xy z' },
    { content: '\nb' },
    {},
  ]);
});

test('a completion has the text and the reasoning, and their parts in order, one per change of kind', async () => {
  const table: [script: string, content: string, reasoning: string | undefined, parts: unknown[]][] = [
    [
      '/think a\n/say b\n/think c\n/say d',
      'b\nd',
      'a\nc',
      [
        { kind: 'thinking', text: 'a' },
        { kind: 'text', text: 'b' },
        { kind: 'thinking', text: '\nc' },
        { kind: 'text', text: '\nd' },
      ],
    ],
    [
      '/think a\n/think b\n/say c\n/repeat 2 x',
      'c\nx x',
      'a\nb',
      [
        { kind: 'thinking', text: 'a\nb' },
        { kind: 'text', text: 'c\nx x' },
      ],
    ],
    ['/repeat 0 x\n/say y', 'y', undefined, [{ kind: 'text', text: 'y' }]],
  ];
  for (const [script, content, reasoning, parts] of table) {
    const { message } = (await completion(planOf(script), { id: 'g' })).choices[0]!;
    assert.equal(message.content, content, script);
    assert.equal(message.reasoning, reasoning, script);
    assert.deepEqual(message[PARTS], parts, script);
  }
});
