// A woken intern's processes start at the gateway's CPU priority, so the interns already awake do
// not slow its start, and lower themselves once it is over (docs/fleet.md, "Startup snapshots and priority").
// With autogroup (on in Debian's kernel) the scheduler first shares the CPU between sessions, each
// session's group weighted by its own nice, and only then between the threads inside by theirs: an
// intern's sandbox is a session of its own, so lowering its threads alone changes nothing against
// the gateway or other interns; its group is lowered too.
import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { getPriority, setPriority } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

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

/** Sets the nice of the autogroup (session) `pid` is in. Best effort: false where the kernel has no
 * autogroup or refuses; while its rate limit refuses (EAGAIN: one write per 100 ms machine-wide
 * for a process without CAP_SYS_ADMIN) it tries again a little later, `tries` times in all. */
export async function setGroupPriority(nice: number, pid: number | 'self' = 'self', tries = 30): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    try {
      await writeFile(`/proc/${pid}/autogroup`, String(nice));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return false;
      await sleep(50 + Math.random() * 150);
    }
  }
  return false;
}

/** Gives the session `pid` leads (a command started with setsid) this thread's priority, where
 * that is below the default: a new session's group starts at nice 0 whatever its creator's. */
export function groupLikeMe(pid: number): void {
  const nice = getPriority();
  if (nice > 0) void setGroupPriority(nice, pid);
}

/** How long a started intern's processes keep their starter's priority at most. */
const KEEP_STARTER_PRIORITY_MS = 5_000;

/** Lowers the priority once: at the returned function's first call, or after `afterMs`, whichever
 * comes first. `group`: this process's session is its own (an intern's daemon, in its sandbox's
 * session), whose group is lowered too. No `nice`: nothing to do (an unisolated intern keeps its priority). */
export function lowerPriorityLater(
  nice: number | undefined,
  { afterMs = KEEP_STARTER_PRIORITY_MS, group = false }: { afterMs?: number; group?: boolean } = {},
): () => void {
  if (nice === undefined) return () => undefined;
  let done = false;
  const now = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    lowerPriority(nice);
    if (group) void setGroupPriority(nice);
  };
  const timer = setTimeout(now, afterMs);
  timer.unref();
  return now;
}
