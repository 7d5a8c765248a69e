// Cancel: callbacks once, the flag before them, and the AbortSignal only when asked for.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Cancel } from './cancel.ts';

/** Counts the AbortControllers made during the test. */
function countControllers(t: TestContext): { made: number } {
  const Real = globalThis.AbortController;
  const count = { made: 0 };
  globalThis.AbortController = class extends Real {
    constructor() {
      super();
      count.made++;
    }
  };
  t.after(() => void (globalThis.AbortController = Real));
  return count;
}

test('callbacks run once, in order, after aborted turns true; no AbortController is made', (t) => {
  const count = countControllers(t);
  const c = new Cancel();
  const seen: string[] = [];
  c.onCancel(() => seen.push(`a ${c.aborted}`));
  c.onCancel(() => seen.push(`b ${c.aborted}`));
  assert.equal(c.aborted, false);
  assert.deepEqual(seen, []);
  c.cancel();
  c.cancel();
  assert.equal(c.aborted, true);
  assert.deepEqual(seen, ['a true', 'b true']);
  assert.equal(count.made, 0);
});

test('a callback registered after cancel() runs at once', () => {
  const c = new Cancel();
  c.cancel();
  let ran = 0;
  c.onCancel(() => ran++);
  assert.equal(ran, 1);
});

test('the signal is made on first use, once, and aborts with the cancellation', (t) => {
  const count = countControllers(t);
  const c = new Cancel();
  const signal = c.signal;
  assert.equal(c.signal, signal);
  assert.equal(count.made, 1);
  let fired = 0;
  signal.addEventListener('abort', () => fired++);
  assert.equal(signal.aborted, false);
  c.cancel();
  assert.equal(signal.aborted, true);
  assert.equal(fired, 1);
});

test('a signal asked for after cancel() is already aborted', () => {
  const c = new Cancel();
  c.cancel();
  assert.equal(c.signal.aborted, true);
});
