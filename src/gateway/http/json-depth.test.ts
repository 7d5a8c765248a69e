import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { nestsDeeperThan } from './json-depth.ts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

test('counts object and array nesting, the outermost as depth 1', () => {
  const table: [text: string, max: number, deeper: boolean][] = [
    ['{}', 1, false],
    ['{"a":{}}', 1, true],
    ['{"a":[{"b":1}]}', 3, false],
    ['{"a":[{"b":1}]}', 2, true],
    [nested(64), 64, false],
    [nested(65), 64, true],
    [nested(5000), 64, true],
    // Siblings do not add up: depth is how deep, not how many.
    [`[${Array(200).fill('[1]').join(',')}]`, 2, false],
    ['"just a string"', 1, false],
  ];
  for (const [text, max, deeper] of table)
    assert.equal(nestsDeeperThan(text, max), deeper, `${text.slice(0, 30)} / ${max}`);
});

test('brackets inside strings, escaped quotes included, do not count', () => {
  assert.equal(nestsDeeperThan(JSON.stringify({ a: '[[[[[[[[[[' }), 2), false);
  assert.equal(nestsDeeperThan(JSON.stringify({ a: 'say \\"[[[[[[[[' }), 2), false);
  assert.equal(nestsDeeperThan('{"a":"\\\\","b":[[[]]]}', 3), true);
});

test('agrees with the depth of any value JSON.stringify writes', () => {
  const depthOf = (v: unknown): number =>
    v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0;
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 1, max: 10 }), (v, max) => {
      assert.equal(nestsDeeperThan(JSON.stringify(v), max), depthOf(v) > max);
    }),
    { numRuns: 500 },
  );
});
