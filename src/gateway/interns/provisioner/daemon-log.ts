// Reading a starting daemon's log (its stdout and stderr, a file on the host): the line that says
// it is up, or what it said when it died.
// May import: node built-ins.
import { existsSync, readFileSync, watch } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** What a daemon that died while starting said: its error line (a stack's first), else its last lines. */
export function startFailure(log: string): string {
  const lines = log
    .trim()
    .split('\n')
    .filter((l) => l.trim());
  const error = lines.find((l) => /^\w*Error\b|^cohort daemon:|^bwrap:|^mount:|^unshare:/.test(l.trim()));
  return (error ?? lines.slice(-3).join(' | ')).trim().slice(0, 500);
}

/** The first match of `pattern` in the log after byte `from` (its first group), once it appears. */
export async function waitForLine(o: {
  logFile: string;
  from: number;
  pattern: RegExp;
  child: { exited: boolean };
  timeoutMs: number;
}): Promise<string> {
  const until = Date.now() + o.timeoutMs;
  // A watch wakes this as soon as the daemon writes (a wake's caller is waiting); the short poll
  // covers whatever a watch misses.
  let changed: (() => void) | null = null;
  const watcher = watch(o.logFile, () => changed?.());
  watcher.on('error', () => undefined);
  try {
    while (Date.now() < until) {
      const text = existsSync(o.logFile) ? readFileSync(o.logFile).subarray(o.from).toString('utf8') : '';
      const m = o.pattern.exec(text);
      if (m) return m[1] ?? m[0];
      if (o.child.exited) throw new Error(`the daemon exited during start: ${startFailure(text)}`);
      await Promise.race([sleep(20), new Promise<void>((resolve) => (changed = resolve))]);
    }
    throw new Error(`the daemon did not report its address within ${o.timeoutMs} ms`);
  } finally {
    watcher.close();
  }
}
