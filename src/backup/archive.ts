// Reading a backup archive without trusting it. A restore first reads the whole archive without
// writing a byte (inspect): every entry's path and type against what a cohort backup holds, the
// intern archives inside it entry by entry, and every checksum. Only an archive that passed is
// unpacked (unpack), into a folder of the data dir, files 0600 and folders 0700. An entry that
// could write outside its place (an absolute path, `..`, a path under a symlink of the archive's),
// a hard link or a device is refused, naming the entry.
// May import: ./manifest, the provisioner's file layout, node built-ins and npm packages (tar).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { create as tarCreate, extract as tarExtract, list, Parser, type ReadEntry } from 'tar';
import { ARCHIVES, DISK_DIRS } from '../gateway/interns/provisioner/files.ts';
import { TABLES } from './manifest.ts';

/** Entry types a cohort backup holds: files and folders, and inside an intern's disk symlinks. */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const TABLE = new RegExp(`^tables/(${TABLES.join('|')})\\.jsonl$`);
const INTERN_ARCHIVE = new RegExp(`^interns/(${UUID})/(${Object.keys(ARCHIVES).join('|').replaceAll('.', '\\.')})$`);
/** Format 1 kept an intern's disk as plain entries under interns/<id>/. */
const INTERN_TREE = new RegExp(`^interns/(${UUID})/((?:${DISK_DIRS.join('|')})(?:/.*)?)$`);
const FOLDERS = new RegExp(`^(tables|interns|interns/${UUID})/?$`);

/** Why an entry of an intern's disk (a path relative to the disk's root) must not be unpacked, or null. */
export function diskEntryRefusal(
  path: string,
  type: string,
  o: { top: readonly string[]; links: Set<string> },
): string | null {
  const parts = path.replace(/\/+$/, '').split('/');
  if (path.startsWith('/')) return 'an absolute path';
  if (parts.some((p) => p === '..')) return 'a path that climbs out with ..';
  if (parts.some((p) => p === '' || p === '.')) return 'a path with an empty or . component';
  if (!o.top.includes(parts[0]!)) return `a path outside ${o.top.map((t) => `${t}/`).join(', ')}`;
  for (let i = 1; i < parts.length; i++)
    if (o.links.has(parts.slice(0, i).join('/'))) return 'a path under a symlink of the archive';
  if (type === 'SymbolicLink') {
    o.links.add(parts.join('/'));
    return null;
  }
  if (FILE_TYPES.has(type) || type === 'Directory') return null;
  return type === 'Link' ? 'a hard link' : `an entry of type ${type}`;
}

export type Inspected = {
  /** The text of manifest.json, if the archive has one. */
  manifest: string | null;
  /** sha256 of every file entry but the manifest, by path. */
  checksums: Map<string, string>;
  /** Whether interns' files are kept as archives (format 2) or as trees (format 1). */
  layout: { archives: boolean; trees: boolean };
  /** Format 1's symlinks in intern trees, whose checksums were of what they pointed to. */
  links: Set<string>;
};

export class EntryRefused extends Error {
  override name = 'EntryRefused';
}

const neverHolds = (path: string, why: string) =>
  `the archive has an entry a cohort backup never holds: ${path} is ${why}`;

/** Checks the intern archive `name` (daemon.tar or files.tar) as it streams by. */
function innerParser(where: string, name: keyof typeof ARCHIVES): { parser: Parser; done: Promise<void> } {
  const links = new Set<string>();
  let problem: string | null = null;
  const parser = new Parser({
    strict: true,
    onReadEntry: (e: ReadEntry) => {
      const why = problem ? null : diskEntryRefusal(e.path, e.type, { top: ARCHIVES[name], links });
      if (why) problem = neverHolds(`${where}: ${e.path}`, why);
      e.resume();
    },
  });
  const done = new Promise<void>((resolve, reject) => {
    parser.on('error', (err: Error) =>
      reject(new EntryRefused(`${where} is not a valid tar archive (${err.message})`)),
    );
    parser.on('end', () => (problem ? reject(new EntryRefused(problem)) : resolve()));
  });
  return { parser, done };
}

/** Reads the whole archive, writing nothing: refuses a bad entry (EntryRefused), and hashes the rest.
 * A truncated or corrupted archive throws tar's own error. */
export async function inspect(file: string): Promise<Inspected> {
  const checksums = new Map<string, string>();
  const layout = { archives: false, trees: false };
  const links = new Map<string, Set<string>>();
  const symlinks = new Set<string>();
  const inner: Promise<void>[] = [];
  let manifest: string | null = null;
  let refused: string | null = null;
  const refuse = (path: string, why: string) => {
    refused ??= neverHolds(path, why);
  };
  await list({
    file,
    strict: true,
    onReadEntry: (e: ReadEntry) => {
      const path = e.path;
      const tree = INTERN_TREE.exec(path);
      if (path === 'manifest.json' && FILE_TYPES.has(e.type)) {
        const chunks: Buffer[] = [];
        e.on('data', (c: Buffer) => chunks.push(c));
        e.on('end', () => (manifest = Buffer.concat(chunks).toString('utf8')));
        return;
      }
      if (FOLDERS.test(path) && e.type === 'Directory') return void e.resume();
      if (tree) {
        layout.trees = true;
        const own = links.get(tree[1]!) ?? links.set(tree[1]!, new Set()).get(tree[1]!)!;
        const why = diskEntryRefusal(tree[2]!, e.type, { top: DISK_DIRS, links: own });
        if (why) refuse(path, why);
        if (e.type === 'SymbolicLink') symlinks.add(path);
        if (!FILE_TYPES.has(e.type)) return void e.resume();
      } else if (!FILE_TYPES.has(e.type) || (!TABLE.test(path) && !INTERN_ARCHIVE.test(path))) {
        refuse(path, e.type === 'Link' ? 'a hard link' : `not a part of a backup (${e.type})`);
        return void e.resume();
      }
      const nested = INTERN_ARCHIVE.exec(path);
      const check = nested && e.size > 0 ? innerParser(path, nested[2] as keyof typeof ARCHIVES) : null;
      if (nested) layout.archives = true;
      if (check) inner.push(check.done);
      const hash = createHash('sha256');
      e.on('data', (c: Buffer) => {
        hash.update(c);
        check?.parser.write(c);
      });
      e.on('end', () => {
        checksums.set(path, hash.digest('hex'));
        check?.parser.end();
      });
    },
  });
  if (refused) throw new EntryRefused(refused);
  await Promise.all(inner);
  return { manifest, checksums, layout, links: symlinks };
}

/** Unpacks an inspected archive into `dir` (made here, 0700). Format 1's intern trees become the
 * archives of format 2, so that a restore unpacks every intern's files one way. */
export async function unpack(file: string, dir: string, o: { trees: boolean }): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The process umask (077, src/cli/main.ts) makes every file 0600 and folder 0700 as it is written.
  await tarExtract({ file, cwd: dir, strict: true, preserveOwner: false });
  if (!o.trees || !existsSync(join(dir, 'interns'))) return;
  for (const id of readdirSync(join(dir, 'interns'))) {
    const root = join(dir, 'interns', id);
    for (const [name, dirs] of Object.entries(ARCHIVES)) {
      const present = dirs.filter((d) => existsSync(join(root, d)));
      if (present.length) await tarCreate({ file: join(root, name), cwd: root, portable: true }, present);
    }
  }
}
