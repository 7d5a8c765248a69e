import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { parseJson } from './parse.ts';

const S = z.object({ a: z.number(), b: z.object({ c: z.string() }).optional() });

test('parseJson: the typed value, or an error naming what was read and the wrong fields, not their values', () => {
  const cases: [string, { ok: unknown } | { error: string }][] = [
    ['{"a":1}', { ok: { a: 1 } }],
    ['{"a":1,"extra":"dropped"}', { ok: { a: 1 } }],
    ['{"a":1,"b":{"c":"x"}}', { ok: { a: 1, b: { c: 'x' } } }],
    ['not json', { error: 'the thing is not JSON' }],
    ['{"a":"secret"}', { error: 'the thing is not as expected: a: Invalid input: expected number, received string' }],
    [
      '{"b":{"c":2}}',
      {
        error:
          'the thing is not as expected: a: Invalid input: expected number, received undefined; b.c: Invalid input: expected string, received number',
      },
    ],
    ['[1]', { error: 'the thing is not as expected: (itself): Invalid input: expected object, received array' }],
  ];
  for (const [text, want] of cases) {
    if ('ok' in want) assert.deepEqual(parseJson(S, text, 'the thing'), want.ok, text);
    else assert.throws(() => parseJson(S, text, 'the thing'), { message: want.error }, text);
  }
});
