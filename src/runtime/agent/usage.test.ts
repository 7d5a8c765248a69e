// A turn's summed usage: costs add up to the decimal a person expects, not a float's neighbour.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addUsage, addUsd } from './usage.ts';

test('costs sum without float noise', () => {
  assert.equal(addUsd(0.000016, 0.000034), 0.00005);
  assert.equal(addUsd(0.1, 0.2), 0.3);
  const a = { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, cost: 0.000016 };
  const b = {
    prompt_tokens: 20,
    completion_tokens: 7,
    total_tokens: 27,
    cost: 0.000034,
    prompt_tokens_details: { cached_tokens: 4 },
  };
  assert.deepEqual(addUsage(a, b), {
    prompt_tokens: 30,
    completion_tokens: 10,
    total_tokens: 40,
    cost: 0.00005,
    prompt_tokens_details: { cached_tokens: 4 },
  });
});

test('a call without a cost leaves the total as it was; none at all gives no cost', () => {
  const zero = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  assert.deepEqual(addUsage(zero, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }), {
    prompt_tokens: 1,
    completion_tokens: 1,
    total_tokens: 2,
  });
  assert.deepEqual(addUsage({ ...zero, cost: 0.25 }, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }), {
    prompt_tokens: 1,
    completion_tokens: 1,
    total_tokens: 2,
    cost: 0.25,
  });
});
