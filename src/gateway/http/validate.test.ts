import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { describeIssues, parseWith } from './validate.ts';
import { ApiError } from '../errors.ts';

const Shape = z.object({ name: z.string().max(3), provider: z.object({ sort: z.string() }).strict() }).strict();

test('issues name the field by its full path', () => {
  const cases: [unknown, string][] = [
    [{ name: 'abcd', provider: { sort: 'x' } }, 'name: Too big: expected string to have <=3 characters'],
    [{ name: 'a', provider: { sort: 'x', extra: 1 } }, 'provider.extra: unknown field'],
    [{ name: 'a', provider: { sort: 'x' }, a: 1, b: 2 }, 'a, b: unknown fields'],
    [[], 'body: Invalid input: expected object, received array'],
  ];
  for (const [value, message] of cases) {
    const r = Shape.safeParse(value);
    assert.equal(r.success, false);
    assert.equal(describeIssues(r.error!), message);
  }
});

test('a failed union names the field inside the branch the value matched by type', () => {
  const Item = z.discriminatedUnion('type', [
    z.object({ type: z.literal('a'), n: z.number() }),
    z.object({ type: z.literal('b') }),
  ]);
  const Input = z.object({ input: z.union([z.string(), z.array(Item)]) });
  const cases: [unknown, string][] = [
    [{ input: [{ type: 'a', n: 'x' }] }, 'input.0.n: Invalid input: expected number, received string'],
    [{ input: [{ type: 'c' }] }, "input.0.type: Invalid discriminator value. Expected 'a' | 'b'"],
    [{ input: 5 }, 'input: Invalid input'],
  ];
  for (const [value, message] of cases) {
    const r = Input.safeParse(value);
    assert.equal(r.success, false);
    assert.equal(describeIssues(r.error!), message);
  }
});

test('parseWith throws the documented 400', () => {
  assert.throws(
    () => parseWith(Shape, {}),
    (e: unknown) => e instanceof ApiError && e.status === 400 && /^invalid request parameters: name: /.test(e.message),
  );
});
