// An intern's files from the host's side, for backup and restore, as two tar archives: daemon.tar
// (its daemon's state, root's) and files.tar (agent/, work/, home/: the intern uid's). The host
// never follows a path the tenant controls (docs/isolation.md, "The control plane and an intern's
// files"): GNU tar writes and reads them inside the intern's own view, without capabilities, as
// the owner of what it reads (root for daemon/, the intern's uid for the rest):
// - a running intern's disk is read in its daemon's mount namespace (nsenter), where nothing of
//   the host is;
// - a stopped intern's image is mounted read-only and nosymfollow in a helper's private mount
//   namespace, and read there; a plain directory (COHORT_INTERN_DISK_MB=0) is read in place;
// - a restore writes into a fresh disk, from archives already checked entry by entry.
// tar never follows a symlink (it archives the link), and a file the tenant changes or swaps
// while it is read is skipped and reported, never fatal.
// May import: node built-ins.
import { spawn } from 'node:child_process';
import { closeSync, createReadStream, existsSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Parser } from 'tar';
import type { FileCount } from './index.ts';

/** The directories of an intern's disk that hold its state, by owner: root's daemon/ (the sessions
 * map), the intern uid's agent/ (conversations), work/ and home/. */
export const ROOT_DIRS = ['daemon'] as const;
export const INTERN_DIRS = ['agent', 'work', 'home'] as const;
export const DISK_DIRS = [...ROOT_DIRS, ...INTERN_DIRS];

/** The archives of one intern's files, by the directories they hold. */
export const ARCHIVES = { 'daemon.tar': ROOT_DIRS, 'files.tar': INTERN_DIRS } as const;

/** Where a disk's root is seen: at `wd` in the mount namespace of process `ns` (null: the host's). */
export type DiskView = { ns: number | null; wd: string };

const NSENTER = '/usr/bin/nsenter';
/** A process that keeps its user id and drops every capability and group, for good. */
const DROP = '/usr/bin/setpriv --clear-groups --bounding-set=-all --inh-caps=-all --no-new-privs';
const TAR_OUT =
  'tar --create --file=- --format=gnu --numeric-owner --no-acls --no-xattrs --no-selinux --one-file-system --ignore-failed-read --warning=no-file-ignored';
const TAR_IN =
  'tar --extract --file=- --no-same-owner --preserve-permissions --numeric-owner --no-acls --no-xattrs --no-selinux --delay-directory-restore';

/** Writes daemon.tar (fd 3) and files.tar (fd 4) of the disk in the shell's directory; $1 is the
 * intern's uid, or empty where there is none to take (an unisolated intern: as this process).
 * Each tar's status is reported on stderr (`cohort-tar NAME STATUS`). */
const PACK_SCRIPT = `
uid=$1
as() { who=$1; shift; if [ -n "$uid" ]; then ${DROP} --reuid="$who" --regid="$who" -- "$@"; else "$@"; fi; }
pack() { fd=$1; who=$2; shift 2; dirs=; for d in "$@"; do [ -d "$d" ] && [ ! -L "$d" ] && dirs="$dirs $d"; done
  if [ -n "$dirs" ]; then as "$who" ${TAR_OUT} $dirs >&"$fd"; echo "cohort-tar $fd $?" >&2; fi; }
pack 3 0 ${ROOT_DIRS.join(' ')}
pack 4 "$uid" ${INTERN_DIRS.join(' ')}
`;

/** Makes a fresh disk's directories as a start prepares them (runtime.ts) and unpacks daemon.tar
 * (fd 3) and files.tar (fd 4) into them, each as their owner. $1: the uid, or empty (unisolated). */
const UNPACK_SCRIPT = `
set -e
uid=$1
as() { who=$1; shift; if [ -n "$uid" ]; then ${DROP} --reuid="$who" --regid="$who" -- "$@"; else "$@"; fi; }
chmod 755 .
for d in ${DISK_DIRS.join(' ')}; do [ -d "$d" ] || mkdir "$d"; done
chmod 700 daemon; chmod 755 ${INTERN_DIRS.join(' ')}
if [ -n "$uid" ]; then chown "$uid:$uid" ${INTERN_DIRS.join(' ')}; fi
as 0 ${TAR_IN} <&3
as "$uid" ${TAR_IN} <&4
`;

export type PackResult = FileCount & {
  /** Entries tar skipped, with why (changed while read, unreadable, swapped for a link): at most 100. */
  skipped: string[];
};

/** Runs `script` as root in `view` with the archives on fds 3 and 4; resolves with its stderr. */
function runInView(o: { view: DiskView; script: string; uid: number | null; fds: [number, number] }): Promise<string> {
  const args = ['-c', o.script, 'cohort-files', o.uid === null ? '' : String(o.uid)];
  const [file, argv] =
    o.view.ns === null
      ? ['/bin/sh', args]
      : [NSENTER, [`--mount=/proc/${o.view.ns}/ns/mnt`, `--wdns=${o.view.wd}`, '--', '/bin/sh', ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, {
      cwd: o.view.ns === null ? o.view.wd : '/',
      stdio: ['ignore', 'ignore', 'pipe', o.fds[0], o.fds[1]],
    });
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(err) : reject(new Error(lastLines(err) || `exit ${code}`))));
  });
}

const lastLines = (s: string) => s.trim().split('\n').slice(-3).join('; ').slice(0, 500);

/** Counts the files of an archive and their bytes. */
async function count(file: string): Promise<FileCount> {
  const c = { files: 0, bytes: 0 };
  if (!existsSync(file) || statSync(file).size === 0) return c;
  const parser = new Parser({
    onReadEntry: (e) => {
      if (e.type === 'File' || e.type === 'OldFile') {
        c.files++;
        c.bytes += e.size;
      }
      e.resume();
    },
  });
  await new Promise<void>((resolve, reject) => {
    createReadStream(file).on('error', reject).pipe(parser).on('end', resolve).on('error', reject);
  });
  return c;
}

/** Writes `to`/daemon.tar and `to`/files.tar from the disk seen in `view` (see the header). A tar
 * that fails outright fails this intern's pack; what it skipped is reported. */
export async function packDisk(o: { view: DiskView; uid: number | null; to: string }): Promise<PackResult> {
  const files = Object.keys(ARCHIVES).map((n) => join(o.to, n));
  const fds = files.map((f) => openSync(f, 'w', 0o600)) as [number, number];
  let stderr: string;
  try {
    stderr = await runInView({ view: o.view, script: PACK_SCRIPT, uid: o.uid, fds });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  const failed = [...stderr.matchAll(/^cohort-tar (\d) (\d+)$/gm)].filter((m) => Number(m[2]) > 1);
  if (failed.length) throw new Error(`tar failed: ${lastLines(stderr.replace(/^cohort-tar .*$/gm, ''))}`);
  const skipped = [...stderr.matchAll(/^tar: (.+)$/gm)].map((m) => m[1]!).filter((l) => !/^Exiting with/.test(l));
  const [daemon, rest] = await Promise.all(files.map(count));
  return { files: daemon!.files + rest!.files, bytes: daemon!.bytes + rest!.bytes, skipped: skipped.slice(0, 100) };
}

/** Unpacks `from`/daemon.tar and `from`/files.tar (checked before: backup/archive.ts) onto the
 * fresh disk seen in `view`. */
export async function unpackDisk(o: { view: DiskView; uid: number | null; from: string }): Promise<FileCount> {
  const files = Object.keys(ARCHIVES).map((n) => join(o.from, n));
  const fds = files.map((f) => openSync(existsSync(f) ? f : '/dev/null', 'r')) as [number, number];
  try {
    await runInView({ view: o.view, script: UNPACK_SCRIPT, uid: o.uid, fds });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  const [daemon, rest] = await Promise.all(files.map(count));
  return { files: daemon!.files + rest!.files, bytes: daemon!.bytes + rest!.bytes };
}

/** Mounts a disk image in a private mount namespace held by a helper process, whose pid is the
 * view's namespace. Read-only mounts are nosymfollow too: nothing on them is followed. */
export async function mountImage(
  image: string,
  mountPoint: string,
  o: { readOnly: boolean },
): Promise<{ view: DiskView; release(): Promise<void> }> {
  const options = o.readOnly ? 'loop,ro,nosuid,nodev,noexec,nosymfollow' : 'loop,nosuid,nodev';
  const script = `mount -o ${options} "$1" "$2" && echo mounted && exec sleep 86400`;
  const child = spawn(
    '/usr/bin/unshare',
    ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'cohort-mount', image, mountPoint],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) =>
      reject(new Error(`could not mount the intern's disk ${image} (${err.trim() || `exit ${code}`})`)),
    );
  });
  return {
    view: { ns: child.pid!, wd: mountPoint },
    release: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
