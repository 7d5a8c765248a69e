// Backup, restore and the move between stores (`cohort backup | restore | migrate`): one archive
// (tar.gz) holding a manifest, every table as JSON lines from one snapshot, and every intern's
// files as two tar archives read through the intern's own view (the provisioner's files.ts). The
// master key is never in it; the manifest names it by fingerprint. One intern whose files cannot
// be read fails only its own entry, which the manifest and the CLI report. A restore reads the
// whole archive before it writes anything (archive.ts: every entry, the interns' archives, every
// checksum, the format, migration level and master key, an empty target), writes only inside the
// data dir, and inserts the rows in one transaction.
// May import: the gateway's store, provisioner and crypto, ./*, node built-ins and npm packages (tar).
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { create as tarCreate } from 'tar';
import type { Store } from '../gateway/store/db.ts';
import { latestMigration } from '../gateway/store/migrate.ts';
import type { Provisioner } from '../gateway/interns/provisioner/index.ts';
import { interns } from '../gateway/store/schema-interns.ts';
import { FORMAT, FORMAT_VERSION, Manifest, fingerprint, refusal } from './manifest.ts';
import { countRows, dumpTables, loadTables } from './rows.ts';
import { EntryRefused, inspect, unpack } from './archive.ts';

export { fingerprint } from './manifest.ts';

/** A refusal of a restore or backup, said in words; nothing was written. */
export class BackupRefused extends Error {
  override name = 'BackupRefused';
}

const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

async function sha256(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

export type BackupResult = { manifest: Manifest; bytes: number };

/** What a backup or restore reports: the counts and sizes, not the checksums; and each intern
 * whose files were not all read, with why. */
export const summary = (r: { manifest: Manifest; bytes?: number }) => {
  const entries = Object.entries(r.manifest.interns);
  return {
    created_at: r.manifest.created_at,
    migration: r.manifest.migration,
    master_key_fingerprint: r.manifest.master_key_fingerprint,
    counts: r.manifest.counts,
    interns: entries.length,
    intern_files: entries.reduce((n, [, i]) => n + i.files, 0),
    interns_failed: Object.fromEntries(entries.flatMap(([id, i]) => (i.error ? [[id, i.error]] : []))),
    intern_files_skipped: Object.fromEntries(
      entries.flatMap(([id, i]) => (i.skipped?.length ? [[id, i.skipped]] : [])),
    ),
    ...(r.bytes === undefined ? {} : { bytes: r.bytes }),
  };
};

/** Writes a backup of `store` and of every intern's files to `file`. It is written as
 * `FILE.partial` and renamed when complete, so `FILE` is never a partial archive; a run cut off
 * leaves that `.partial`, which the next backup to `FILE` replaces. */
export async function createBackup(o: {
  store: Store;
  provisioner: Provisioner;
  masterKey: Buffer;
  file: string;
}): Promise<BackupResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-backup-'));
  try {
    const { counts, migration } = await dumpTables(o.store, dir);
    const rows = await o.store.db.select({ id: interns.id, pid: interns.daemonPid }).from(interns).orderBy(interns.id);
    const internFiles: Manifest['interns'] = {};
    await eachAtOnce(rows, INTERNS_AT_ONCE, async (row) => {
      const to = join(dir, 'interns', row.id);
      try {
        const got = await o.provisioner.exportFiles({ id: row.id, pid: row.pid }, to);
        internFiles[row.id] = {
          files: got.files,
          bytes: got.bytes,
          ...(got.skipped.length ? { skipped: got.skipped } : {}),
        };
      } catch (err) {
        // This intern's entry only: the others, and the store, are still worth having.
        rmSync(to, { recursive: true, force: true });
        internFiles[row.id] = { files: 0, bytes: 0, error: (err as Error).message.slice(0, 500) };
      }
    });
    const checksums: Record<string, string> = {};
    for (const f of filesUnder(dir)) checksums[f] = await sha256(join(dir, f));
    const manifest: Manifest = {
      format: FORMAT,
      format_version: FORMAT_VERSION,
      created_at: new Date().toISOString(),
      cohort_version: VERSION,
      migration,
      source: o.store.kind,
      master_key_fingerprint: fingerprint(o.masterKey),
      counts,
      interns: Object.fromEntries(rows.map((r) => [r.id, internFiles[r.id]!])),
      checksums,
    };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2), { mode: 0o600 });
    const partial = `${o.file}.partial`;
    writeFileSync(partial, '', { mode: 0o600 });
    await tarCreate({ gzip: true, file: partial, cwd: dir, portable: true }, readdirSync(dir));
    renameSync(partial, o.file);
    return { manifest, bytes: statSync(o.file).size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Reads and checks an archive, writing nothing (archive.ts): every entry, the interns' archives
 * within it, the manifest and every checksum. */
export async function checkArchive(file: string): Promise<{ manifest: Manifest; trees: boolean }> {
  if (!existsSync(file)) throw new BackupRefused(`no archive at ${file}`);
  let seen: Awaited<ReturnType<typeof inspect>>;
  try {
    seen = await inspect(file);
  } catch (err) {
    if (err instanceof EntryRefused) throw new BackupRefused(err.message);
    throw new BackupRefused(`the archive is truncated or corrupted (${(err as Error).message})`);
  }
  let manifest: Manifest;
  try {
    manifest = Manifest.parse(JSON.parse(seen.manifest ?? ''));
  } catch {
    throw new BackupRefused('the archive has no valid manifest: it is not a cohort backup, or it is corrupted');
  }
  const trees = manifest.format_version < 2;
  if (trees ? seen.layout.archives : seen.layout.trees)
    throw new BackupRefused(
      `the archive is corrupted: its interns' files are not laid out as format ${manifest.format_version} has them`,
    );
  for (const [f, sum] of Object.entries(manifest.checksums)) {
    if (seen.links.has(f)) continue;
    const have = seen.checksums.get(f);
    if (have === undefined) throw new BackupRefused(`the archive is corrupted: ${f} is missing`);
    if (have !== sum) throw new BackupRefused(`the archive is corrupted: ${f} does not match its checksum`);
    seen.checksums.delete(f);
  }
  const extra = [...seen.checksums.keys()][0];
  if (extra) throw new BackupRefused(`the archive is corrupted: ${extra} is not in its manifest`);
  return { manifest, trees };
}

export type RestoreTarget = {
  masterKey: Buffer | null;
  dataDir: string;
  /** Whether intern files go into the data dir (a restore), or stay where they are (a migrate). */
  internFiles: boolean;
  /** Opens (and migrates) the target store, once the archive has passed its checks. */
  open(): Promise<{ store: Store; provisioner: Provisioner }>;
};

/** Restores an archive into an empty store (and data dir); returns its manifest, whose counts
 * were checked after the move. Nothing is written before the archive passed every check, and
 * nothing outside the data dir. */
export async function restoreBackup(file: string, t: RestoreTarget): Promise<Manifest> {
  const { manifest: m, trees } = await checkArchive(file);
  const why = refusal(m, { latestMigration: latestMigration(), masterKey: t.masterKey });
  if (why) throw new BackupRefused(why);
  const internsDir = join(t.dataDir, 'interns');
  if (t.internFiles && existsSync(internsDir) && readdirSync(internsDir).length)
    throw new BackupRefused(`the target data dir already has interns (${internsDir}); restore into an empty data dir`);
  mkdirSync(t.dataDir, { recursive: true, mode: 0o700 });
  // A data dir made beforehand (to hold the master key) is the operator's alone before anything goes in.
  chmodSync(t.dataDir, 0o700);
  const dir = join(t.dataDir, `.restore-${randomBytes(6).toString('hex')}`);
  try {
    await unpack(file, dir, { trees });
    await restoreInto(await t.open(), dir, m, t.internFiles ? internsDir : null);
    return m;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function restoreInto(
  t: { store: Store; provisioner: Provisioner },
  dir: string,
  m: Manifest,
  internsDir: string | null,
): Promise<void> {
  const before = await countRows(t.store.db);
  const occupied = Object.entries(before).find(([, n]) => n > 0);
  if (occupied)
    throw new BackupRefused(
      `the target store is not empty (${occupied[1]} rows in ${occupied[0]}); restore into an empty data dir or database`,
    );
  await loadTables(t.store.db, dir);
  const after = await countRows(t.store.db);
  for (const [table, n] of Object.entries(m.counts)) {
    if (after[table as keyof typeof after] !== n)
      throw new Error(`after the restore ${table} has ${after[table as keyof typeof after]} rows, the archive ${n}`);
  }
  if (!internsDir) return;
  mkdirSync(internsDir, { recursive: true, mode: 0o700 });
  // An intern with no files of its own (never started, or its entry failed) starts on a new disk.
  const withFiles = Object.keys(m.interns).filter((id) => existsSync(join(dir, 'interns', id)));
  await eachAtOnce(withFiles, INTERNS_AT_ONCE, (id) => t.provisioner.importFiles(id, join(dir, 'interns', id)));
}

/** Interns whose files are read or written at once: each is a few short processes (tar in its
 * view), which overlap well even on two cores. */
const INTERNS_AT_ONCE = 4;

/** Runs `fn` on every item, at most `limit` at a time; rejects with the first failure. */
async function eachAtOnce<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
