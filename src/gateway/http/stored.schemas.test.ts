import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { describeIssues } from './validate.ts';
import { StoredString, storedJson } from './stored.schemas.ts';

const problem = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  return r.success ? null : describeIssues(r.error);
};

test('a stored string refuses U+0000 and unpaired surrogates, and keeps everything else', () => {
  const S = z.object({ name: StoredString.min(1).max(10) });
  assert.equal(problem(S, { name: 'a\u0000b' }), 'name: must not contain U+0000 (NUL)');
  assert.equal(problem(S, { name: 'a\ud800' }), 'name: must not contain an unpaired surrogate');
  assert.equal(problem(S, { name: '\udc00b' }), 'name: must not contain an unpaired surrogate');
  for (const ok of ['😀', 'é\n\t\u0001"', '\\u0000']) assert.equal(problem(S, { name: ok }), null, ok);
  assert.equal(problem(S, { name: '' }), 'name: Too small: expected string to have >=1 characters');
});

test('a stored JSON value names the first string or key that cannot be stored, by its path', () => {
  const S = z.object({ reasoning: storedJson(z.looseObject({})) });
  assert.equal(
    problem(S, { reasoning: { a: [1, { b: 'x\u0000' }] } }),
    'reasoning.a.1.b: must not contain U+0000 (NUL)',
  );
  assert.equal(problem(S, { reasoning: { a: { 'k\u0000': 1 } } }), 'reasoning.a: a key must not contain U+0000 (NUL)');
  assert.equal(
    problem(S, { reasoning: { a: ['ok', 'x\ud83d'] } }),
    'reasoning.a.1: must not contain an unpaired surrogate',
  );
  assert.equal(problem(S, { reasoning: { a: [null, true, 1.5, '😀', { b: {} }] } }), null);
});

test('a deeply nested value is checked in linear time, without recursion', () => {
  let deep: unknown = 'x\u0000';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const started = performance.now();
  const message = problem(storedJson(z.array(z.unknown())), deep);
  assert.ok(message?.endsWith('.0: must not contain U+0000 (NUL)'));
  assert.ok(performance.now() - started < 2000);
});
