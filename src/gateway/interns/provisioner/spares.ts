// Warm spares (docs/fleet.md): a few sandboxes whose daemon and built-in agent have started but
// have no intern yet, so a wake hands one its intern instead of starting two Node processes. Each
// spare lives in `<data dir>/run/spares/<random>/` (its log, its empty /intern, its /run/cohort,
// its /etc files); a claimed one stays there until its intern stops. Spares start at the lowest
// priority (nice 19) and a moment after one was taken, so keeping the pool full uses only time
// that no wake and no awake intern wants; one whose start is starved all the same is raised (onSlow).
// May import: ./daemon-log.ts, node built-ins.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { waitForLine } from './daemon-log.ts';

/** A started spare: its launcher's pid (the sandbox dies with it) and the pipe its assignment goes on. */
export type Spare = { dir: string; pid: number; stdin: Writable; logFile: string; state: { exited: boolean } };

export type SparePoolOptions = {
  /** Spares kept ready; 0: none. */
  size: number;
  /** `<data dir>/run/spares`. */
  dir: string;
  /** Starts a spare's sandbox in `dir` (prepared: intern/, run/, etc/), its output to `logFile`. */
  launch: (o: { dir: string; logFile: string }) => Omit<Spare, 'dir' | 'logFile'>;
  /** Kills a launcher (and so its sandbox) if it is still the one started for `dir`. */
  kill: (pid: number, dir: string) => Promise<void>;
  startTimeoutMs?: number;
  onError?: (message: string) => void;
  /** Called every `slowMs` while a spare has not said it waits: its start is starved. */
  onSlow?: (spare: Spare) => void;
  slowMs?: number;
};

export type SparePool = {
  /** A ready spare, now the caller's (it is no longer the pool's to stop), or null. */
  take(): Spare | null;
  /** Stops the spares not taken; the pool starts no more. */
  close(): Promise<void>;
};

const WAITING = /\{"spare":"waiting"\}/;
/** A taken spare is replaced this long after: a moment for the wake that took it, whose processes
 * run above the new spare's anyway. */
const REFILL_MS = 250;
/** A spare's start takes well under a second where the machine has time to spare. */
const SLOW_MS = 3_000;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export function createSparePool(o: SparePoolOptions): SparePool {
  const ready: Spare[] = [];
  const starting = new Set<Spare>();
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  const later = (ms: number) => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      fill();
    }, ms);
    timer.unref();
  };

  async function startOne(): Promise<void> {
    const dir = join(o.dir, randomBytes(8).toString('hex'));
    for (const d of ['intern', 'run']) mkdirSync(join(dir, d), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'owner'), String(process.pid));
    const logFile = join(dir, 'daemon.log');
    let spare: Spare | null = null;
    try {
      spare = { dir, logFile, ...o.launch({ dir, logFile }) };
      starting.add(spare);
      writeFileSync(join(dir, 'pid'), String(spare.pid));
      const started = spare;
      // Marked for the operator: a spare that waits above the lowest priority was starved.
      const slow = setInterval(() => {
        writeFileSync(join(dir, 'starved'), '');
        o.onSlow?.(started);
      }, o.slowMs ?? SLOW_MS);
      slow.unref();
      await waitForLine({
        logFile,
        from: 0,
        pattern: WAITING,
        child: spare.state,
        timeoutMs: o.startTimeoutMs ?? 20_000,
      }).finally(() => clearInterval(slow));
      starting.delete(spare);
      if (closed) throw new Error('closed');
      ready.push(spare);
    } catch (err) {
      if (spare) starting.delete(spare);
      if (spare) await o.kill(spare.pid, dir);
      rmSync(dir, { recursive: true, force: true });
      if (!closed) {
        o.onError?.(`a warm spare did not start: ${(err as Error).message}`);
        // A host that cannot start one now is not asked again at once.
        later(30_000);
      }
    }
  }

  function fill(): void {
    while (!closed && ready.length + starting.size < o.size) void startOne();
  }

  /** Spares a gateway that is gone left behind (never claimed): stopped and removed. */
  async function sweep(): Promise<void> {
    let names: string[] = [];
    try {
      names = readdirSync(o.dir);
    } catch {}
    for (const name of names) {
      const dir = join(o.dir, name);
      const read = (f: string) => {
        try {
          return Number(readFileSync(join(dir, f), 'utf8'));
        } catch {
          return 0;
        }
      };
      if (existsSync(join(dir, 'claimed'))) continue;
      const owner = read('owner');
      if (owner && owner !== process.pid && alive(owner)) continue;
      // A directory made a moment ago may be another gateway's spare still being written.
      if (!owner && Date.now() - (statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 10_000) continue;
      const pid = read('pid');
      if (pid) await o.kill(pid, dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  if (o.size > 0) {
    mkdirSync(o.dir, { recursive: true, mode: 0o700 });
    void sweep().then(() => fill());
  }

  return {
    take() {
      while (ready.length) {
        const spare = ready.shift()!;
        if (spare.state.exited || !alive(spare.pid)) {
          rmSync(spare.dir, { recursive: true, force: true });
          continue;
        }
        writeFileSync(join(spare.dir, 'claimed'), '');
        later(REFILL_MS);
        return spare;
      }
      later(REFILL_MS);
      return null;
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const all = [...ready, ...starting];
      ready.length = 0;
      starting.clear();
      await Promise.all(
        all.map(async (s) => {
          await o.kill(s.pid, s.dir);
          rmSync(s.dir, { recursive: true, force: true });
        }),
      );
    },
  };
}
