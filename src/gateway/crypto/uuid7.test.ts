// uuidv7: the RFC 9562 layout, the time in its first 48 bits, ids that sort as they were made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uuidv7 } from './uuid7.ts';

test('version 7, variant 10, the given time in the first 48 bits', () => {
  const id = uuidv7(0x0123_4567_89ab);
  assert.match(id, /^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('ids made later sort after earlier ones, and a pool refill does not repeat an id', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(Array.from({ length: 2000 }, () => uuidv7(1)).concat(ids)).size, 3000);
});
