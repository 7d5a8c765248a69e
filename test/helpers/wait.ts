// Waiting for a condition rather than for time: a test polls what it waits for until it holds, up to
// a deadline that only a broken build reaches (a loaded machine is slow, not wrong), and then
// fails saying what never happened.
import { setTimeout as sleep } from 'node:timers/promises';

export type WaitOptions = {
  /** How long the condition may take before the test fails; generous, for a loaded machine. */
  timeoutMs?: number;
  /** How often it is checked. */
  everyMs?: number;
};

/** Resolves with the condition's first truthy value; rejects naming `what` once `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  { timeoutMs = 20_000, everyMs = 20 }: WaitOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got) return got as NonNullable<T>;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(everyMs);
  }
}
