// One process at a time on a PGlite data dir: PGlite has no lock of its own, and a second
// process opening the same files corrupts them. The holder's pid sits in <data dir>/pglite.lock;
// a file left by a process that no longer runs is taken over.
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirBusy extends Error {
  constructor(
    readonly file: string,
    readonly pid: number,
  ) {
    super(
      `the data dir is in use by process ${pid} (a running gateway or CLI); PGlite allows one process at a time, ` +
        `so stop it first (or use DATABASE_URL for PostgreSQL). If no such process runs, delete ${file}.`,
    );
    this.name = 'DataDirBusy';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the data dir's lock or throws DataDirBusy; returns the release function. */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'pglite.lock');
  const mine = String(process.pid);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, mine, { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
      // a second collision means another process took over the stale file just now
      if ((holder && holder !== process.pid && alive(holder)) || attempt > 0) throw new DataDirBusy(file, holder);
      unlinkSync(file);
    }
  }
  const release = () => {
    process.off('exit', release);
    try {
      if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  process.on('exit', release);
  return release;
}
