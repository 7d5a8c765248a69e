// A woken intern's processes start at the gateway's CPU priority, so the interns already awake do
// not slow its start, and lower themselves once it is over (docs/fleet.md, "Startup snapshots and priority").
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** Raises every thread of this process to at least `nice`. Linux keeps a nice value per thread
 * (setpriority takes a thread id); threads started later inherit their creator's. */
export function lowerPriority(nice: number): void {
  let threads: number[];
  try {
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    threads = [process.pid];
  }
  for (const tid of threads) {
    try {
      if (getPriority(tid) < nice) setPriority(tid, nice);
    } catch {
      // the thread ended between the listing and the call
    }
  }
}

/** How long a started intern's processes keep their starter's priority at most. */
const KEEP_STARTER_PRIORITY_MS = 5_000;

/** Lowers the priority once: at the returned function's first call, or after `afterMs`, whichever
 * comes first. No `nice`: nothing to do (an unisolated intern keeps its priority). */
export function lowerPriorityLater(nice: number | undefined, afterMs = KEEP_STARTER_PRIORITY_MS): () => void {
  if (nice === undefined) return () => undefined;
  let done = false;
  const now = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    lowerPriority(nice);
  };
  const timer = setTimeout(now, afterMs);
  timer.unref();
  return now;
}
