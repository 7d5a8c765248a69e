// Request-log rows on disk (docs/failure-modes.md): when the store cannot take them for long, or
// the gateway stops before it could, the rows wait in `<data dir>/request-log/` as JSON lines,
// one file per spill, until a gateway writes them to the store and removes the file. A file
// appears whole or not at all (written beside, then renamed), so a crash mid-spill leaves no
// half file to misread. Gateways sharing a data dir may replay one file together: the store
// ignores a row it already holds (by id), so a row is written once whoever gets there first.
// May import: store schema types, node built-ins.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InferenceRequestRow } from '../store/schema-inference.ts';

const SUFFIX = '.jsonl';

/** Writes the rows into a new file of `dir`; throws as the disk refuses (full, read-only). */
export function spillRows(dir: string, rows: InferenceRequestRow[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Named by time first, so files sort in the order they were spilled.
  const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const partial = join(dir, `${name}.partial`);
  let text = '';
  for (const r of rows) text += `${JSON.stringify(r)}\n`;
  try {
    writeFileSync(partial, text, { mode: 0o600 });
    renameSync(partial, join(dir, name + SUFFIX));
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
}

/** The spilled files of `dir`, oldest first; none when it does not exist. Partial files a minute
 * old are left from a crash between write and rename and are removed (their rows went with the
 * crashed queue); younger ones may be another gateway's spill under way. */
export function spilledFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  for (const n of names) {
    if (!n.endsWith('.partial')) continue;
    try {
      if (Date.now() - statSync(join(dir, n)).mtimeMs > 60_000) rmSync(join(dir, n), { force: true });
    } catch {}
  }
  return names
    .filter((n) => n.endsWith(SUFFIX))
    .sort()
    .map((n) => join(dir, n));
}

/** The rows of a spilled file (null if another gateway took it meanwhile). A line that does not
 * parse (a disk error) is returned in `unreadable`, to be counted as lost. */
export function readSpilled(file: string): { rows: InferenceRequestRow[]; unreadable: number } | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const rows: InferenceRequestRow[] = [];
  let unreadable = 0;
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      const r = JSON.parse(line) as InferenceRequestRow & { createdAt: string };
      rows.push({ ...r, createdAt: new Date(r.createdAt) });
    } catch {
      unreadable++;
    }
  }
  return { rows, unreadable };
}

export const removeSpilled = (file: string) => rmSync(file, { force: true });
