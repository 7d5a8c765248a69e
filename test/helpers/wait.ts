// Waiting for a condition rather than for time: a test polls what it waits for until it holds, up to
// a deadline that only a broken build reaches (a loaded machine is slow, not wrong), and then
// fails saying what never happened. Its deadline is on the monotonic clock, so a test that mocks
// Date (node:test's mock.timers) still times out.
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

export type WaitOptions = {
  /** How long the condition may take before the test fails; generous, for a loaded machine. */
  timeoutMs?: number;
  /** How often it is checked. */
  everyMs?: number;
};

/** `get`'s first value that `done` holds of; rejects naming `what`, and the last value read, once `timeoutMs` passes. */
export async function waitForValue<T>(
  what: string,
  get: () => T | Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 20_000, everyMs = 20 }: WaitOptions = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (performance.now() >= deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting until ${what} (last read: ${inspect(value, { depth: 4 })})`,
      );
    await sleep(everyMs);
  }
}

/** Resolves with the condition's first truthy value; rejects naming `what` once `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options?: WaitOptions,
): Promise<NonNullable<T>> {
  return (await waitForValue(what, check, Boolean, options)) as NonNullable<T>;
}
