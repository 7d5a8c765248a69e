// Backup, restore and the move between stores (`cohort backup | restore | migrate`): one archive
// (tar.gz) holding a manifest, every table as JSON lines from one snapshot, and every intern's
// files. The master key is never in it; the manifest names it by fingerprint. A restore checks
// everything (format, migration level, master key, every checksum, an empty target) before it
// writes anything, and inserts the rows in one transaction.
// May import: the gateway's store, provisioner and crypto, ./*, node built-ins and npm packages (tar).
import { createHash } from 'node:crypto';
import {
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
import { create as tarCreate, extract as tarExtract } from 'tar';
import type { Store } from '../gateway/store/db.ts';
import { latestMigration } from '../gateway/store/migrate.ts';
import type { Provisioner } from '../gateway/interns/provisioner/index.ts';
import { interns } from '../gateway/store/schema-interns.ts';
import { FORMAT, FORMAT_VERSION, Manifest, fingerprint, refusal } from './manifest.ts';
import { countRows, dumpTables, loadTables } from './rows.ts';

export { fingerprint } from './manifest.ts';

/** A refusal of a restore or backup, said in words; nothing was written. */
export class BackupRefused extends Error {
  override name = 'BackupRefused';
}

const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

async function sha256(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

function staging(): string {
  return mkdtempSync(join(tmpdir(), 'cohort-backup-'));
}

export type BackupResult = { manifest: Manifest; bytes: number };

/** What a backup or restore reports: the counts and sizes, not the checksums. */
export const summary = (r: { manifest: Manifest; bytes?: number }) => ({
  created_at: r.manifest.created_at,
  migration: r.manifest.migration,
  master_key_fingerprint: r.manifest.master_key_fingerprint,
  counts: r.manifest.counts,
  interns: Object.keys(r.manifest.interns).length,
  intern_files: Object.values(r.manifest.interns).reduce((n, i) => n + i.files, 0),
  ...(r.bytes === undefined ? {} : { bytes: r.bytes }),
});

/** Writes a backup of `store` and of every intern's files to `file` (atomically: a partial archive is never left under that name). */
export async function createBackup(o: {
  store: Store;
  provisioner: Provisioner;
  masterKey: Buffer;
  file: string;
}): Promise<BackupResult> {
  const dir = staging();
  try {
    const { counts, migration } = await dumpTables(o.store, dir);
    const internFiles: Manifest['interns'] = {};
    for (const row of await o.store.db.select({ id: interns.id, pid: interns.daemonPid }).from(interns)) {
      internFiles[row.id] = await o.provisioner.exportFiles({ id: row.id, pid: row.pid }, join(dir, 'interns', row.id));
    }
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
      interns: internFiles,
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

/** Unpacks and checks an archive: its manifest, and every entry against its checksum. */
export async function openArchive(file: string): Promise<{ dir: string; manifest: Manifest; close(): void }> {
  if (!existsSync(file)) throw new BackupRefused(`no archive at ${file}`);
  const dir = staging();
  const close = () => rmSync(dir, { recursive: true, force: true });
  try {
    try {
      await tarExtract({ file, cwd: dir, strict: true });
    } catch (err) {
      throw new BackupRefused(`the archive is truncated or corrupted (${(err as Error).message})`);
    }
    let manifest: Manifest;
    try {
      manifest = Manifest.parse(JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')));
    } catch {
      throw new BackupRefused('the archive has no valid manifest: it is not a cohort backup, or it is corrupted');
    }
    const present = new Set(filesUnder(dir).filter((f) => f !== 'manifest.json'));
    for (const [f, sum] of Object.entries(manifest.checksums)) {
      if (!present.delete(f)) throw new BackupRefused(`the archive is corrupted: ${f} is missing`);
      if ((await sha256(join(dir, f))) !== sum)
        throw new BackupRefused(`the archive is corrupted: ${f} does not match its checksum`);
    }
    if (present.size) throw new BackupRefused(`the archive is corrupted: ${[...present][0]} is not in its manifest`);
    return { dir, manifest, close };
  } catch (err) {
    close();
    throw err;
  }
}

export type RestoreTarget = {
  masterKey: Buffer | null;
  dataDir: string;
  /** Whether intern files go into the data dir (a restore), or stay where they are (a migrate). */
  internFiles: boolean;
  /** Opens (and migrates) the target store, once the archive has passed its checks. */
  open(): Promise<{ store: Store; provisioner: Provisioner }>;
};

/** Restores an archive into an empty store (and data dir); returns its manifest, whose counts were checked after the move. */
export async function restoreBackup(file: string, t: RestoreTarget): Promise<Manifest> {
  const archive = await openArchive(file);
  try {
    const m = archive.manifest;
    const why = refusal(m, { latestMigration: latestMigration(), masterKey: t.masterKey });
    if (why) throw new BackupRefused(why);
    const internsDir = join(t.dataDir, 'interns');
    if (t.internFiles && existsSync(internsDir) && readdirSync(internsDir).length)
      throw new BackupRefused(
        `the target data dir already has interns (${internsDir}); restore into an empty data dir`,
      );
    await restoreInto(await t.open(), archive.dir, m, t.internFiles ? internsDir : null);
    return m;
  } finally {
    archive.close();
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
  for (const id of Object.keys(m.interns)) {
    const from = join(dir, 'interns', id);
    await t.provisioner.importFiles(id, existsSync(from) ? from : mkdtempSync(join(dir, 'empty-')));
  }
}
