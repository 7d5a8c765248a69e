// An intern's files from the host's side, for backup and restore, as two tar archives: daemon.tar
// (its daemon's state, root's) and files.tar (agent/, work/, home/: the intern uid's). The host
// never follows a path the tenant controls (docs/backup.md, "An intern's files are read through
// its own view"):
// - files.tar is written and read by GNU tar inside the intern's own view, as the intern's uid
//   without capabilities: a running intern's disk in its daemon's mount namespace (nsenter), where
//   nothing of the host is; a stopped intern's image mounted read-only and nosymfollow in a
//   helper's private mount namespace; a plain directory (COHORT_INTERN_DISK_MB=0) in place. tar
//   archives a symlink as a link and opens nothing through one; what the tenant changes or swaps
//   while it is read is skipped and reported, never fatal;
// - daemon.tar is root's daemon/, which the tenant can neither write nor rename (the disk's root
//   is root's too): it is read and written here, through the host's way to the same view;
// - a restore writes into a fresh disk, from archives already checked entry by entry
//   (src/backup/archive.ts).
// May import: src/shared (spawner), tenant-job.ts, files-pack.ts, files-unpack.ts, node built-ins and npm packages (tar).
import { spawn } from 'node:child_process';
import { createSpawner, type Job, type JobResult } from '../../../shared/spawner.ts';
import { tenantJob } from './tenant-job.ts';
import { packArgv } from './files-pack.ts';
import { unpackArgv } from './files-unpack.ts';
import type { Writable } from 'node:stream';
import type { OnReadOpts, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  createReadStream,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create as tarCreate, extract as tarExtract, Parser } from 'tar';
import type { FileCount } from './index.ts';

/** The directories of an intern's disk that hold its state, by owner: root's daemon/ (the sessions
 * map), the intern uid's agent/ (conversations), work/ and home/. */
export const ROOT_DIRS = ['daemon'] as const;
export const INTERN_DIRS = ['agent', 'work', 'home'] as const;
export const DISK_DIRS = [...ROOT_DIRS, ...INTERN_DIRS];

/** The archives of one intern's files, by the directories they hold. */
export const ARCHIVES = { 'daemon.tar': ROOT_DIRS, 'files.tar': INTERN_DIRS } as const;

/** Where a disk's root is seen: at `wd` in the mount namespace of process `ns` (null: the host's),
 * and where the host reaches that same root (through /proc/<ns>/root). */
export type DiskView = { ns: number | null; wd: string; host: string };

/** The view of a disk at `wd` in the mount namespace of process `ns`. */
export const viewIn = (ns: number, wd: string): DiskView => ({ ns, wd, host: `/proc/${ns}/root${wd}` });
/** The view of a disk in the host's own namespace. */
export const hostView = (dir: string): DiskView => ({ ns: null, wd: dir, host: dir });

const NSENTER = '/usr/bin/nsenter';
const ROOT_WITHOUT_CAPABILITIES = [
  '/usr/bin/setpriv',
  '--clear-groups',
  '--bounding-set=-all',
  '--inh-caps=-all',
  '--no-new-privs',
  '--',
];
const TAR_OPTIONS = ['--numeric-owner', '--no-acls', '--no-xattrs', '--no-selinux'];
const TAR_OUT = [
  'tar',
  '--create',
  '--file=-',
  '--format=gnu',
  ...TAR_OPTIONS,
  '--one-file-system',
  // A tenant's hard links are archived as the files they name: an archive holds no link entries,
  // which a restore refuses (src/backup/archive.ts).
  '--hard-dereference',
  '--ignore-failed-read',
  '--warning=no-file-ignored',
];
const TAR_IN = [
  'tar',
  '--extract',
  '--file=-',
  '--no-same-owner',
  '--preserve-permissions',
  ...TAR_OPTIONS,
  '--delay-directory-restore',
];

/** The short processes of backups and restores are started by a small helper (src/shared/spawner.ts):
 * a fork of a gateway holding an embedded database costs milliseconds each. */
const spawner = createSpawner();

/** A program's argv and where it runs: `view` as `uid` (null: as this process). An intern's uid
 * is taken by the process that starts the program (setgroups, setgid, setuid: root's capabilities
 * go with it); root (the files of an intern that never started) keeps its uid and drops every
 * capability, for good. */
function jobIn(o: { view: DiskView; uid: number | null; argv: string[]; stdin?: string }): Job {
  const argv = o.uid === 0 ? [...ROOT_WITHOUT_CAPABILITIES, ...o.argv] : o.argv;
  if (o.view.ns === null)
    return {
      file: argv[0]!,
      args: argv.slice(1),
      cwd: o.view.wd,
      stdin: o.stdin,
      ...(o.uid ? { uid: o.uid } : {}),
    };
  const ids = o.uid ? [`--setuid=${o.uid}`, `--setgid=${o.uid}`] : [];
  const args = [`--mount=/proc/${o.view.ns}/ns/mnt`, `--wdns=${o.view.wd}`, ...ids, '--', ...argv];
  return { file: NSENTER, args, cwd: '/', stdin: o.stdin };
}

/** Runs a program (GNU tar, files-op.mjs, files-pack.ts's script) in `view` as `uid` (jobIn), its input and output in the
 * files `stdin` and `stdout`; resolves with its exit code and stderr. */
function runIn(o: { view: DiskView; uid: number | null; argv: string[]; stdin?: string; stdout?: string }) {
  return spawner.run({ ...jobIn(o), stdout: o.stdout });
}

/** The files API's operations, run inside an intern's view (files-op.mjs says how). */
const FILES_OP = fileURLToPath(new URL('./files-op.mjs', import.meta.url));

/** What an operation of files-op.mjs answered: {ok: true, ...} or {ok: false, kind, path}. */
export type FileOpResult =
  | { ok: true; type: string; size?: number; created?: boolean; warnings?: string[] }
  | { ok: false; kind: string; path: string; detail?: string };

/** Runs one files-op.mjs operation in `view` as `uid`; `stdin` and `stdout` are files of this host. */
export async function fileOp(o: {
  view: DiskView;
  uid: number | null;
  args: string[];
  stdin?: string;
  stdout?: string;
}): Promise<FileOpResult> {
  return resultOf(
    await runIn({
      view: o.view,
      uid: o.uid,
      argv: [process.execPath, FILES_OP, ...o.args],
      stdin: o.stdin,
      stdout: o.stdout,
    }),
  );
}

/** An operation's outcome: the last line of its stderr. */
function resultOf(r: JobResult): FileOpResult {
  const last = r.stderr.trim().split('\n').at(-1) ?? '';
  try {
    const parsed = JSON.parse(last) as FileOpResult;
    if (typeof parsed === 'object' && parsed && 'ok' in parsed) return parsed;
  } catch {}
  return { ok: false, kind: 'failed', path: '', detail: lastLines(r.stderr) || `exit ${r.code}` };
}

/** Packs the folder `rel` of the work folder in `view` as `uid` (files-pack.ts), its tar stream
 * on `stdout` as it is written (spawner.ts), read by `onread`, to be sent once `passed` (the walk's
 * `ok` on descriptor 3) and dropped on a refusal: `stdout` ends when the stream does; destroying it
 * stops the tar (its next write fails). `result` never rejects. */
export async function packStream(o: {
  view: DiskView;
  uid: number | null;
  rel: string;
  maxBytes: number;
  maxEntries: number;
  onread: OnReadOpts;
}): Promise<{ stdout: Socket; passed: Promise<void>; result: Promise<FileOpResult> }> {
  const argv = packArgv(o.rel, { maxBytes: o.maxBytes, maxEntries: o.maxEntries });
  const s = await spawner.connect(jobIn({ view: o.view, uid: o.uid, argv }), ['stdout', 'fd3'], {
    onread: { stdout: o.onread },
  });
  const result = s.result.then(resultOf, (err: Error) => ({
    ok: false as const,
    kind: 'failed',
    path: '',
    detail: err.message,
  }));
  const control = s.ends.fd3;
  control.on('error', () => {});
  const passed = new Promise<void>((resolve) => control.once('data', () => resolve()));
  control.resume();
  return { stdout: s.ends.stdout, passed, result };
}

/** The staging folders of folder uploads, at the disk's root (files-op.mjs's UPLOADS). */
const UPLOADS = '.uploads';
/** A staging folder older than this is an upload's whose gateway went away mid-way. */
const STALE_UPLOAD_MS = 24 * 3600_000;

/** A folder's upload under way (stageUpload): the tar stream is written to `stdin`; `ended`
 * settles if the job ends before it is told the verdict (the target refused, tar failed: the
 * upload is then best stopped); `finish` says the gateway's verdict and answers the outcome: GNU
 * tar's failure, the target's refusal, or the move's. */
export type StagedUpload = {
  stdin: Writable;
  ended: Promise<void>;
  finish(commit: boolean): Promise<FileOpResult>;
};

/** Starts a folder's upload into the folder `rel` of the work folder in `view` (a running
 * intern's): files-unpack.ts's script, as `uid`, looks at the target and has GNU tar unpack what is
 * written to `stdin` into a staging folder of the disk's own (.uploads/<name>, beside work/: on the
 * same disk, so that its entries are moved, not copied), then moves them into place or removes
 * them on the verdict. It starts before the first byte, so that its start is not waited for once
 * the body flows. .uploads is root's (0711, made here through the host's way to the disk root,
 * which is root's too): the tenant can neither list it nor swap a staging folder for a link. */
export async function stageUpload(o: { view: DiskView; uid: number | null; rel: string }): Promise<StagedUpload> {
  const uploads = join(o.view.host, UPLOADS);
  mkdirSync(uploads, { recursive: true, mode: 0o711 });
  const seen = lstatSync(uploads);
  if (!seen.isDirectory() || seen.uid !== process.getuid?.())
    throw new Error(`${UPLOADS} on the intern's disk is not this process's folder`);
  // Whatever this process's umask.
  if ((seen.mode & 0o777) !== 0o711) chmodSync(uploads, 0o711);
  sweepStale(uploads);
  const name = randomBytes(12).toString('hex');
  const staged = join(uploads, name);
  mkdirSync(staged, { mode: 0o700 });
  if (o.uid !== null) lchownSync(staged, o.uid, o.uid);
  const removeStaged = () => rmSync(staged, { recursive: true, force: true });
  try {
    const argv = unpackArgv({ name, rel: o.rel, filesOp: FILES_OP, node: process.execPath });
    const job = await spawner.connect(jobIn({ view: o.view, uid: o.uid, argv }), ['stdin', 'fd3']);
    const { stdin, fd3: control } = job.ends;
    stdin.on('error', () => {});
    control.on('error', () => {});
    return {
      stdin,
      ended: job.result.then(
        () => {},
        () => {},
      ),
      async finish(commit) {
        control.end(commit ? 'commit' : 'discard');
        const r = await job.result.then(resultOf, (err: Error) => ({
          ok: false as const,
          kind: 'failed',
          path: '',
          detail: err.message,
        }));
        removeStaged();
        return !r.ok && r.kind === 'tar' ? tarFailure(r.detail ?? '') : r;
      },
    };
  } catch (err) {
    removeStaged();
    throw err;
  }
}

/** Staging folders left by uploads whose gateway went away mid-way, removed. What the tenant's tar
 * wrote there is removed without following a link (rmSync), in a folder the tenant cannot list. */
function sweepStale(uploads: string): void {
  for (const name of readdirSync(uploads)) {
    const path = join(uploads, name);
    if (Date.now() - lstatSync(path).mtimeMs > STALE_UPLOAD_MS) rmSync(path, { recursive: true, force: true });
  }
}

/** GNU tar's failure to unpack an upload, by its last lines: a full disk by its own name (a short
 * write into a file is one: the kernel writes what fits, and tar reports the count without the
 * errno that the next write would have had), anything else as tar's. */
export function tarFailure(detail: string): FileOpResult & { ok: false } {
  if (/No space left on device|Disk quota exceeded|Wrote only \d+ of \d+ bytes/.test(detail))
    return { ok: false, kind: 'no_space', path: '' };
  return { ok: false, kind: 'tar', path: '', detail: detail || 'tar failed' };
}

/** Makes a git bundle of the commits on the intern's HEAD since `base` in its repository at
 * work/`repo`, written to the host file `out` (at most `maxBytes`), within `timeoutMs`. git runs
 * where the intern's own shell does, under the tenant's filter (tenant-job.ts), so whatever its
 * repository's configuration makes git run reaches nothing the intern's shell cannot. The bundle
 * is data the gateway then checks in a repository of its own (repositories.ts). */
export async function bundleIn(o: {
  view: DiskView;
  uid: number;
  repo: string;
  base: string;
  out: string;
  maxBytes: number;
  timeoutMs: number;
}): Promise<{ ok: true } | { ok: false; detail: string }> {
  if (o.view.ns === null) return { ok: false, detail: 'the intern is not running in a sandbox' };
  const job = tenantJob({
    ns: o.view.ns,
    cwd: `${o.view.wd}/work/${o.repo}`,
    uid: o.uid,
    env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: `${o.view.wd}/home` },
    argv: [
      'git',
      '-c',
      'core.fsmonitor=false',
      '-c',
      'core.hooksPath=/dev/null',
      'bundle',
      'create',
      '--quiet',
      '-',
      `${o.base}..HEAD`,
    ],
    maxFileBytes: o.maxBytes,
    timeoutMs: o.timeoutMs,
  });
  const r = await spawner.run({ ...job, stdout: o.out });
  if (r.timedOut) return { ok: false, detail: `git bundle took longer than ${o.timeoutMs} ms` };
  return r.code === 0 ? { ok: true } : { ok: false, detail: lastLines(r.stderr) || `exit ${r.code}` };
}

const lastLines = (s: string) => s.trim().split('\n').slice(-3).join('; ').slice(0, 500);

/** Whether `path` is a directory itself (not a link to one). */
function isDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Counts the files of an archive and their bytes. */
async function count(file: string): Promise<FileCount> {
  const c = { files: 0, bytes: 0 };
  if (!existsSync(file)) return c;
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

export type PackResult = FileCount & {
  /** Entries tar skipped, with why (changed while read, unreadable, swapped for a link): at most 100. */
  skipped: string[];
};

/** Writes `to`/daemon.tar and `to`/files.tar from the disk seen in `view` (see the header); a disk
 * without one of the two kinds of folder has no archive of it. A tar that fails outright fails
 * this intern's pack; what it skipped is reported. */
export async function packDisk(o: { view: DiskView; uid: number | null; to: string }): Promise<PackResult> {
  const daemon = join(o.to, 'daemon.tar');
  const files = join(o.to, 'files.tar');
  if (isDir(join(o.view.host, 'daemon')))
    await tarCreate({ file: daemon, cwd: o.view.host, portable: true }, ['daemon']);
  let skipped: string[] = [];
  const dirs = INTERN_DIRS.filter((d) => isDir(join(o.view.host, d)));
  if (dirs.length) {
    const r = await runIn({ view: o.view, uid: o.uid, argv: [...TAR_OUT, ...dirs], stdout: files });
    // 1: some file changed while it was read (reported below); 2 and up: tar could not go on.
    if (r.code !== 0 && r.code !== 1) throw new Error(`tar failed: ${lastLines(r.stderr)}`);
    skipped = [...r.stderr.matchAll(/^tar: (.+)$/gm)].map((m) => m[1]!).filter((l) => !/^Exiting with/.test(l));
  }
  const [d, f] = await Promise.all([count(daemon), count(files)]);
  return { files: d.files + f.files, bytes: d.bytes + f.bytes, skipped: skipped.slice(0, 100) };
}

/** Gives the fresh disk seen in `view` (nothing of it yet the tenant's) the folders a start
 * prepares (runtime.ts), each its owner's. */
export function prepareFolders(view: DiskView, uid: number | null): void {
  const root = view.host;
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'daemon'), { recursive: true });
  chmodSync(join(root, 'daemon'), 0o700);
  for (const d of INTERN_DIRS) {
    mkdirSync(join(root, d), { recursive: true });
    chmodSync(join(root, d), 0o755);
    if (uid !== null) chownSync(join(root, d), uid, uid);
  }
}

/** Gives the fresh disk seen in `view` the folders a start prepares (runtime.ts), and unpacks
 * `from`/daemon.tar and `from`/files.tar (checked before) into them, each as their owner. */
export async function unpackDisk(o: { view: DiskView; uid: number | null; from: string }): Promise<void> {
  prepareFolders(o.view, o.uid);
  const root = o.view.host;
  const daemon = join(o.from, 'daemon.tar');
  if (existsSync(daemon)) await tarExtract({ file: daemon, cwd: root, strict: true, preserveOwner: false });
  const files = join(o.from, 'files.tar');
  if (!existsSync(files)) return;
  const r = await runIn({ view: o.view, uid: o.uid, argv: TAR_IN, stdin: files });
  if (r.code !== 0) throw new Error(`tar failed: ${lastLines(r.stderr)}`);
}

/** Mounts a disk image (or binds a plain directory, read-only only) in a private mount namespace
 * held by a helper process: the view of the disk there. Read-only mounts are nosymfollow too:
 * nothing on them is followed. */
export async function mountImage(
  image: string,
  mountPoint: string,
  o: { readOnly: boolean },
): Promise<{ view: DiskView; release(): Promise<void> }> {
  const options = o.readOnly ? 'loop,ro,nosuid,nodev,noexec,nosymfollow' : 'loop,nosuid,nodev';
  const mount = isDir(image)
    ? `mount --bind "$1" "$2" && mount -o remount,bind,ro,nosuid,nodev,noexec,nosymfollow "$2"`
    : `mount -o ${options} "$1" "$2"`;
  const script = `${mount} && echo mounted && exec sleep 86400`;
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
    view: viewIn(child.pid!, mountPoint),
    release: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
