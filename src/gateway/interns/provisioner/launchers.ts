// Which launchers an intern's processes run under, as recorded in its directory: its cold start's
// (`launcher.pid`, written before the start waits for the daemon, so a gateway that dies during
// the start leaves it for the one that takes the provision over) and the warm spare's it was
// started in (`spare`, the spare's directory, whose `pid` is the spare's launcher; spares.ts).
// May import: ./supervision.ts, node built-ins.
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, ours } from './supervision.ts';

const spareFileOf = (internDir: string) => join(internDir, 'spare');
const launcherFileOf = (internDir: string) => join(internDir, 'launcher.pid');

/** The warm spare's directory the intern's daemon was started in, if it was. */
export function spareOf(internDir: string): string | null {
  try {
    return readFileSync(spareFileOf(internDir), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** Records the spare a claim gives the intern: from here on, a stop knows its launcher as the intern's. */
export const recordSpare = (internDir: string, spareDir: string) =>
  writeFileSync(spareFileOf(internDir), spareDir, { mode: 0o600 });

/** Records a cold start's launcher. */
export const recordLauncher = (internDir: string, pid: number | null) =>
  writeFileSync(launcherFileOf(internDir), String(pid), { mode: 0o600 });

/** The host directories an intern's launchers name: its own, and its spare's. */
export const dirsOf = (internDir: string) => [internDir, spareOf(internDir)].filter((d): d is string => d !== null);

function pidIn(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

/** The launchers recorded for the intern: its cold start's, and its spare's. */
export function recordedPids(internDir: string): number[] {
  const spare = spareOf(internDir);
  const files = [launcherFileOf(internDir), ...(spare ? [join(spare, 'pid')] : [])];
  return files.map(pidIn).filter((pid) => pid > 0);
}

/** Once a spare's intern has stopped: its log joins the intern's, and the spare's directory goes. */
export function releaseSpare(internDir: string): void {
  const spare = spareOf(internDir);
  if (!spare) return;
  const pid = pidIn(join(spare, 'pid'));
  if (pid && alive(pid) && ours(pid, [spare])) return;
  try {
    appendFileSync(join(internDir, 'daemon.log'), readFileSync(join(spare, 'daemon.log')), { mode: 0o600 });
  } catch {}
  rmSync(spare, { recursive: true, force: true });
  rmSync(spareFileOf(internDir), { force: true });
}
