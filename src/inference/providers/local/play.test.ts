// Playing a plan: a /repeat streams its chunks one by one without being built up front.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { streamChunks, type OkPlan } from './play.ts';
import { plan } from './scripted.ts';

const planOf = (script: string) => plan({ messages: [{ role: 'user', content: script }] }) as OkPlan;

test('a /repeat streams N chunks: the first on a new line after earlier text, the rest after a space', async () => {
  const deltas = [];
  for await (const c of streamChunks(planOf('/say a\n/repeat 3 xy z\n/say b'), { id: 'g', created: 1 })) deltas.push(c.choices[0]!.delta);
  assert.deepEqual(deltas, [{ role: 'assistant', content: '' }, { content: 'a' }, { content: '\nxy z' }, { content: ' xy z' }, { content: ' xy z' }, { content: '\nb' }, {}]);
});
