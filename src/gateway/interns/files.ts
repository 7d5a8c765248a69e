// An intern's work folder from outside (docs/guides/files.md): read a file or list a folder,
// write, delete, move, and a folder in or out as a tar stream. Every operation runs inside the
// intern's own view as its uid (provisioner/files.ts runs provisioner/files-op.mjs there), never
// by this process following a path the tenant controls; bytes cross between the two in spool
// files of the data dir's own (0600, removed once used), but for a folder's download, which is
// read from GNU tar as it writes it (download, tarOut). A request's path is checked here first
// (pathRefusal, pure); a folder's tar is checked entry by entry before anything is unpacked
// (tarRefusal). Reads work on a sleeping or stopped intern without waking it (its disk mounted
// read-only); writes wake a sleeping one and refuse a stopped one. The same service gives an
// intern repositories and takes its work back (repositories.ts does the gateway's git; here is
// where each step happens: the clone placed through the intern's view, the bundle made in its
// sandbox, the gateway's own copy of each repository in its host directory).
// May import: the provisioner interface, the fleet, the store's interns, the error registry, node built-ins, tar.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  renameSync,
  createReadStream,
  createWriteStream,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { pipeline as pipelineCb, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Parser } from 'tar';
import type { Db } from '../store/db.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { Logger } from '../../shared/log.ts';
import {
  fileConflict,
  fileNotFound,
  gitHostRefused,
  repositoryConflict,
  resourceNotFound,
  filePathRefused,
  fileTooLarge,
  internalError,
  internNotReady,
  invalidRequest,
} from '../errors.ts';
import type { InternView, Provisioner } from './provisioner/index.ts';
import { bundleIn, fileOp, packStream, type FileOpResult } from './provisioner/files.ts';
import type { Fleet } from './hibernation.ts';
import { getInternById } from './interns.ts';
import {
  branchRefusal,
  checkRepositories,
  cloneMirror,
  cloneRepository,
  diffOf,
  fieldOf,
  pushBranch,
  takeBundle,
  targetOf,
  type Cloned,
} from './repositories.ts';
import { uuidv7 } from '../crypto/uuid7.ts';
import type { Sealer } from '../crypto/seal.ts';
import { gitAccessFor } from './git-credentials.ts';
import { internRepositories, type InternRepositoryRow } from '../store/schema-interns.ts';
import { and, eq } from 'drizzle-orm';
import type { Repository } from './repositories.schemas.ts';

/** Bounds of a path below the work folder: bytes in all, bytes of one name, folders deep. */
export const MAX_PATH_BYTES = 1024;
export const MAX_NAME_BYTES = 255;
export const MAX_DEPTH = 64;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `idleMs`: a download whose client takes nothing for this long is aborted (outbound). */
export type FilesLimits = { maxBytes: number; maxEntries: number; idleMs: number };
/** Where the gateway clones from (COHORT_GIT_HOSTS) and how long a clone may take. */
export type GitOptions = { hosts: string[]; timeoutMs: number };

/** Why `path` (relative to the work folder, '' for the folder itself) cannot be used, or null. */
export function pathRefusal(path: string): string | null {
  if (path.includes('\0')) return 'contains a NUL byte';
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (path === '') return null;
  if (path.startsWith('/')) return 'is absolute: paths are relative to the work folder /intern/work';
  const parts = path.split('/');
  if (parts.length > MAX_DEPTH) return `is deeper than ${MAX_DEPTH} folders`;
  if (parts.some((p) => p === '..')) return 'climbs out of the work folder with ..';
  if (parts.some((p) => p === '' || p === '.')) return 'has an empty or . component';
  if (parts.some((p) => Buffer.byteLength(p) > MAX_NAME_BYTES)) return `has a name longer than ${MAX_NAME_BYTES} bytes`;
  return null;
}

/** The request's path with a trailing slash dropped, checked. */
export function checkedPath(raw: string): string {
  const path = raw.endsWith('/') ? raw.slice(0, -1) : raw;
  const why = pathRefusal(path);
  if (why) throw filePathRefused(raw, why);
  return path;
}

export const bodyTooLarge = (max: number) =>
  fileTooLarge(`the body exceeds the files API's limit of ${max} bytes (COHORT_FILES_MAX_MB)`);

/** Entry types a folder upload may hold: files and folders (no links, devices or fifos). */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const TYPE_NAMES: Record<string, string> = {
  SymbolicLink: 'a symbolic link',
  Link: 'a hard link',
  CharacterDevice: 'a device',
  BlockDevice: 'a device',
  FIFO: 'a fifo',
};

/** Why a tar entry (its path as written, its type) must not be unpacked, or null; `dirs` gathers
 * the folders seen so far, which every entry's folders must be among (so that GNU tar makes a
 * real folder where the intern planted a link, instead of following it). */
export function tarRefusal(raw: string, type: string, dirs: Set<string>): string | null {
  let path = raw;
  while (path.startsWith('./')) path = path.slice(2);
  path = path.replace(/\/+$/, '');
  if (path === '.' || path === '') return type === 'Directory' ? null : 'the folder itself as a file';
  const why = pathRefusal(path);
  if (why) return `a path that ${why}`;
  if (type !== 'Directory' && !FILE_TYPES.has(type)) return TYPE_NAMES[type] ?? `an entry of type ${type}`;
  const parent = path.split('/').slice(0, -1).join('/');
  if (parent && !dirs.has(parent)) return `a path whose folder "${parent}" is not an entry before it`;
  if (type === 'Directory') dirs.add(path);
  return null;
}

/** Reads a spooled tar stream whole: uncompressed, at most `maxEntries` entries, each refused
 * by tarRefusal naming it. */
async function checkTar(file: string, maxEntries: number): Promise<void> {
  const head = Buffer.alloc(2);
  const fd = openSync(file, 'r');
  const n = readSync(fd, head, 0, 2, 0);
  closeSync(fd);
  if (n === 2 && head[0] === 0x1f && head[1] === 0x8b)
    throw invalidRequest('body: a compressed tar stream; send it uncompressed (tar -c, not tar -cz)');
  const dirs = new Set<string>();
  let entries = 0;
  let refusal: Error | null = null;
  const parser = new Parser({
    strict: true,
    onReadEntry: (e) => {
      entries++;
      if (!refusal && entries > maxEntries)
        refusal = invalidRequest(
          `body: the tar stream holds more than ${maxEntries} entries (COHORT_FILES_MAX_ENTRIES)`,
        );
      const why = refusal ? null : tarRefusal(e.path, e.type, dirs);
      if (why) refusal = invalidRequest(`body: tar entry "${e.path}" is ${why}`);
      e.resume();
    },
  });
  try {
    await pipeline(createReadStream(file), parser);
  } catch (err) {
    throw refusal ?? invalidRequest(`body: not a tar stream (${(err as Error).message.slice(0, 200)})`);
  }
  if (refusal) throw refusal;
}

/** A download as it goes to a client: `from` passed on, failed (which aborts a response that
 * has begun, instead of ending it) when `check` refuses a chunk, when `end` says the source did
 * not end well, or when the client has taken nothing for `idleMs` while bytes waited for it (a
 * reader too slow to hold anything for ever: its source stopped with it). Destroyed (the client
 * went away, or any of these), it destroys `from`. */
export function outbound(
  from: Readable,
  o: { idleMs: number; check?(chunk: Buffer): Error | null; end?(): Promise<Error | null> },
): Readable {
  let idle: NodeJS.Timeout | undefined;
  const out = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      clearTimeout(idle);
      const refused = o.check?.(chunk);
      if (refused) return cb(refused);
      // Its buffer full: the next chunk is taken only once the client reads (_read below).
      if (!this.push(chunk))
        idle = setTimeout(
          () =>
            out.destroy(new Error(`the client took nothing of the download for ${o.idleMs} ms (COHORT_FILES_IDLE_MS)`)),
          o.idleMs,
        );
      cb();
    },
    flush(cb) {
      if (!o.end) return cb();
      o.end().then((err) => cb(err));
    },
  });
  const read = out._read.bind(out);
  out._read = (n) => {
    clearTimeout(idle);
    read(n);
  };
  out.once('close', () => clearTimeout(idle));
  pipelineCb(from, out, () => {});
  return out;
}

/** The tar stream `from` as it goes to a client whose response has begun (its status cannot change
 * any more): past `maxBytes` (the folder grew since it was walked) or with an operation that did not
 * end well (`result`), it fails (outbound), so the client sees a failed download, never a short
 * one. Destroyed (the client went away, or idle), it destroys `from`, which stops the tar that
 * writes it. */
export function tarOut(
  from: Readable,
  o: { maxBytes: number; idleMs: number; result: Promise<FileOpResult> },
): Readable {
  let total = 0;
  return outbound(from, {
    idleMs: o.idleMs,
    check(chunk) {
      total += chunk.length;
      return total > o.maxBytes
        ? new Error(`the tar stream passed ${o.maxBytes} bytes (COHORT_FILES_MAX_MB) while it was sent`)
        : null;
    },
    end: () =>
      o.result.then((r) =>
        r.ok ? null : new Error(`the tar stream failed while it was sent (${r.detail ?? r.kind})`),
      ),
  });
}

export type Got =
  | { type: 'directory'; body: unknown }
  | { type: 'file' | 'tar'; stream: Readable; size: number | null };

export type InternFiles = {
  /** A file's bytes, a folder's listing, or (tar) a folder as a tar stream. */
  get(row: InternRow, path: string, o: { tar: boolean }): Promise<Got>;
  /** Writes the body to a file, or (tar) unpacks it into a folder. */
  put(
    row: InternRow,
    path: string,
    body: Readable | undefined,
    o: { tar: boolean; account: string; signal: AbortSignal },
  ): Promise<{ path: string; type: string; size?: number; created?: boolean }>;
  remove(
    row: InternRow,
    path: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<{ path: string; type: string }>;
  move(
    row: InternRow,
    from: string,
    to: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<{ from: string; to: string; type: string }>;
  /** Refuses repositories that cannot be cloned, naming `field` (pure checks, before anything is made). */
  checkRepositories(list: Repository[], field: string): void;
  /** Clones every repository first (a failure places none), then places each in its folder of the
   * work folder: into a running intern (woken if asleep), or (`created`) into the disk of an
   * intern never started, before its first start. */
  addRepositories(
    row: InternRow,
    list: Repository[],
    o: { account: string; signal: AbortSignal; created: boolean; field: string },
  ): Promise<PlacedRepository[]>;
  listRepositories(row: InternRow): Promise<PlacedRepository[]>;
  /** The intern's committed work in a repository against its base: taken as a bundle made in its
   * sandbox, checked in the gateway's own repository, and diffed there. */
  diff(
    row: InternRow,
    repoId: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<RepositoryWork & { diff: string }>;
  /** The same work pushed to a new branch of the remote. */
  push(
    row: InternRow,
    repoId: string,
    o: { account: string; signal: AbortSignal; branch?: string },
  ): Promise<RepositoryWork & { branch: string }>;
  /** The first half of addRepositories: clones (a failure keeps none); `place` finishes it. */
  cloneRepositories(list: Repository[], field: string, access: Workspace): Promise<ClonedSet>;
  place(
    row: InternRow,
    set: ClonedSet,
    o: { account: string; signal: AbortSignal; created: boolean },
  ): Promise<PlacedRepository[]>;
};

/** Repositories cloned, waiting to be placed; `release` removes the clones. */
/** Whose git credentials a clone may use. */
export type Workspace = { orgId: string; workspaceId: string | null };

export type ClonedSet = { list: Repository[]; cloned: Cloned[]; release(): void };

export type PlacedRepository = { id: string; url: string; ref: string; path: string; commit: string };
export type RepositoryWork = { id: string; path: string; base: string; commit: string };

export function createInternFiles(o: {
  db: Db;
  provisioner: Provisioner;
  fleet: Fleet;
  spoolDir: string;
  /** `<data dir>/interns`: the gateway's own repository of each of an intern's repositories is
   * kept in its directory (repos/<id>.git), and goes with it. */
  internsDir: string;
  limits: FilesLimits;
  git: GitOptions;
  sealer: Sealer;
  log: Logger;
}): InternFiles {
  const { limits } = o;
  const spool = () => {
    mkdirSync(o.spoolDir, { recursive: true, mode: 0o700 });
    return join(o.spoolDir, randomBytes(12).toString('hex'));
  };

  /** The refusal for what an operation answered. */
  function refusal(r: FileOpResult & { ok: false }, fallback: string): Error {
    const p = r.path || fallback || '.';
    switch (r.kind) {
      case 'missing':
        return fileNotFound(p);
      case 'symlink':
        return filePathRefused(p, 'is a symbolic link: the files API follows no link');
      case 'special':
        return filePathRefused(p, 'is a device, fifo or socket: only files and folders are handled');
      case 'not_folder':
        return fileConflict(p, 'is a file, not a folder');
      case 'is_folder':
        return fileConflict(p, 'is a folder; upload a folder with ?format=tar');
      case 'exists':
        return fileConflict(p, 'already exists');
      case 'into_itself':
        return filePathRefused(p, 'cannot be moved into itself');
      case 'is_root':
        return filePathRefused('', 'is the work folder itself, which cannot be removed or moved');
      case 'too_large':
        return fileTooLarge(`"${p}" exceeds the files API's limit of ${limits.maxBytes} bytes (COHORT_FILES_MAX_MB)`);
      case 'too_long':
        return filePathRefused(p, "is too long for the intern's disk");
      case 'no_space':
        return fileTooLarge("the intern's disk is full");
      case 'denied':
        return fileConflict(p, "cannot be read or written by the intern's own user (its permissions)");
      case 'changed':
        return fileConflict(p, 'changed while it was handled; retry');
      case 'tar':
        return invalidRequest(`body: the tar stream could not be unpacked (${r.detail ?? 'tar failed'})`);
      default:
        o.log.error({ detail: r.detail }, 'files operation failed');
        return internalError();
    }
  }

  async function readable(row: InternRow): Promise<InternView> {
    const view = await o.provisioner.openView({ id: row.id, pid: row.daemonPid }, { write: false });
    // A created intern that never started has no disk yet: its work folder is empty.
    if (!view) throw fileNotFound('.');
    return view;
  }

  /** The intern's view for a change: awake, woken if asleep; a stopped intern is refused. */
  async function writable(row: InternRow, account: string, signal: AbortSignal): Promise<InternView> {
    const now = (await getInternById(o.db, row.id)) ?? row;
    if (now.status !== 'running')
      throw internNotReady(now.status, 'provision it to change its files (its files can be read meanwhile)');
    const open = (pid: number | null) => o.provisioner.openView({ id: row.id, pid }, { write: true });
    const view = await open(now.daemonPid);
    if (view) return view;
    await o.fleet.target(now, account, signal);
    const woken = await getInternById(o.db, row.id);
    const again = woken ? await open(woken.daemonPid) : null;
    if (!again) throw internNotReady(woken?.status ?? 'deleted', 'retry shortly');
    return again;
  }

  async function run(view: InternView, args: string[], io: { stdin?: string; stdout?: string } = {}) {
    try {
      return await fileOp({ view: view.view, uid: view.uid, args, ...io });
    } finally {
      await view.release();
    }
  }

  /** The spool file as a stream, gone from the disk once opened. */
  function drain(file: string): Readable {
    const s = createReadStream(file);
    s.once('open', () => rmSync(file, { force: true }));
    s.once('close', () => rmSync(file, { force: true }));
    return s;
  }

  /** The request body into a spool file, refused past the limit. */
  async function take(body: Readable | undefined): Promise<string> {
    const file = spool();
    let total = 0;
    const bound = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        total += chunk.length;
        if (total > limits.maxBytes) return cb(bodyTooLarge(limits.maxBytes));
        cb(null, chunk);
      },
    });
    const out = createWriteStream(file, { mode: 0o600, flags: 'wx' });
    try {
      if (body) await pipeline(body, bound, out);
      else await new Promise<void>((resolve, reject) => out.once('error', reject).end(resolve));
    } catch (err) {
      rmSync(file, { force: true });
      throw err;
    }
    return file;
  }

  /** What gives the gateway's git the workspace's credential for `url` (released after use). */
  const accessFor = (w: Workspace, url: string, field = 'body') =>
    gitAccessFor(o.db, o.sealer, {
      orgId: w.orgId,
      workspaceId: w.workspaceId,
      url,
      field,
      timeoutMs: o.git.timeoutMs,
    });

  async function cloneRepositories(list: Repository[], field: string, w: Workspace): Promise<ClonedSet> {
    checkRepositories(list, o.git.hosts, field);
    const cloned: Cloned[] = [];
    const release = () => {
      for (const c of cloned) c.release();
    };
    try {
      for (const [i, r] of list.entries()) {
        const access = await accessFor(w, r.url, fieldOf(field, i));
        try {
          cloned.push(
            await cloneRepository(r, {
              spoolDir: o.spoolDir,
              maxBytes: limits.maxBytes,
              timeoutMs: o.git.timeoutMs,
              field: fieldOf(field, i),
              env: access.env,
            }),
          );
        } finally {
          access.release();
        }
      }
    } catch (err) {
      release();
      throw err;
    }
    return { list, cloned, release };
  }

  async function place(
    row: InternRow,
    set: ClonedSet,
    { account, signal, created }: { account: string; signal: AbortSignal; created: boolean },
  ): Promise<PlacedRepository[]> {
    const view = created ? await o.provisioner.prepareDisk(row.id) : await writable(row, account, signal);
    const placed: PlacedRepository[] = [];
    try {
      for (const [i, r] of set.list.entries()) {
        const path = targetOf(r);
        const c = set.cloned[i]!;
        const res = await fileOp({ view: view.view, uid: view.uid, args: ['unpack', path, 'fresh'], stdin: c.tar });
        if (!res.ok) throw refusal(res, path);
        const id = uuidv7();
        const mirror = mirrorOf(row.id, id);
        mkdirSync(join(mirror, '..'), { recursive: true, mode: 0o700 });
        renameSync(c.mirror, mirror);
        await o.db
          .insert(internRepositories)
          .values({ id, internId: row.id, url: r.url, ref: c.ref, path, baseCommit: c.commit });
        placed.push({ id, url: r.url, ref: c.ref, path, commit: c.commit });
      }
    } finally {
      await view.release();
    }
    return placed;
  }

  const mirrorOf = (internId: string, repoId: string) => join(o.internsDir, internId, 'repos', `${repoId}.git`);
  const placedOf = (r: InternRepositoryRow): PlacedRepository => ({
    id: r.id,
    url: r.url,
    ref: r.ref,
    path: r.path,
    commit: r.baseCommit,
  });

  /** The intern's work in repository `repoId`: a bundle made in its sandbox, taken into the
   * gateway's own repository. */
  async function work(row: InternRow, repoId: string, account: string, signal: AbortSignal) {
    if (!UUID.test(repoId)) throw resourceNotFound('repository');
    const [repo] = await o.db
      .select()
      .from(internRepositories)
      .where(and(eq(internRepositories.internId, row.id), eq(internRepositories.id, repoId.toLowerCase())));
    if (!repo) throw resourceNotFound('repository');
    const mirror = mirrorOf(row.id, repo.id);
    if (!existsSync(mirror))
      try {
        const access = await accessFor({ orgId: row.orgId, workspaceId: row.workspaceId }, repo.url);
        try {
          await cloneMirror({ url: repo.url, mirror, timeoutMs: o.git.timeoutMs, env: access.env });
        } finally {
          access.release();
        }
      } catch (err) {
        throw repositoryConflict(
          `the gateway's copy of "${repo.path}" could not be made again (${(err as Error).message})`,
        );
      }
    const view = await writable(row, account, signal);
    const out = spool();
    try {
      if (view.uid === null || view.view.ns === null)
        throw repositoryConflict('taking work back needs an isolated intern (COHORT_UNSAFE_NO_ISOLATION is set)');
      const made = await bundleIn({
        view: view.view,
        uid: view.uid,
        repo: repo.path,
        base: repo.baseCommit,
        out,
        maxBytes: limits.maxBytes,
        timeoutMs: o.git.timeoutMs,
      });
      if (!made.ok) {
        if (/empty bundle/.test(made.detail)) return { repo, mirror, commit: repo.baseCommit };
        throw repositoryConflict(`the intern's commits in "${repo.path}" could not be bundled (${made.detail})`);
      }
      const taken = await takeBundle({ mirror, bundle: out, timeoutMs: o.git.timeoutMs });
      if (!taken.ok) throw repositoryConflict(`the intern's bundle of "${repo.path}" was refused (${taken.why})`);
      return { repo, mirror, commit: taken.commit };
    } finally {
      rmSync(out, { force: true });
      await view.release();
    }
  }

  /** The folder `path` as a tar stream made while it is sent (docs/guides/files.md, "A folder's
   * download"): a script of C programs (provisioner/files-pack.ts) walks it first (bounds, refused
   * before a byte), then GNU tar writes it to a socket this process reads; its first byte means
   * the operation was not refused. */
  async function download(row: InternRow, path: string): Promise<Readable> {
    let op = await packing(await readable(row), path);
    // Its daemon stopped between the look and the read (it fell asleep): read its disk instead.
    if (!op.started && !op.r.ok && op.r.kind === 'failed')
      op = await packing(await readable((await getInternById(o.db, row.id)) ?? row), path);
    if (!op.started) {
      if (op.r.ok) throw internalError();
      if (op.r.kind === 'too_large')
        throw fileTooLarge(
          `the folder "${op.r.path || '.'}" as a tar stream exceeds the files API's limit of ${limits.maxBytes} bytes (COHORT_FILES_MAX_MB)`,
        );
      if (op.r.kind === 'too_many')
        throw fileTooLarge(
          `the folder "${op.r.path || '.'}" holds more than ${limits.maxEntries} entries (COHORT_FILES_MAX_ENTRIES)`,
        );
      throw refusal(op.r, path);
    }
    return op.stream;
  }

  /** Starts the pack in the view (released when it ends) and waits for its first byte or its end. */
  async function packing(
    view: InternView,
    rel: string,
  ): Promise<{ started: true; stream: Readable } | { started: false; r: FileOpResult }> {
    let op: Awaited<ReturnType<typeof packStream>>;
    try {
      op = await packStream({ view: view.view, uid: view.uid, rel, ...limits });
    } catch (err) {
      await view.release();
      throw err;
    }
    const { stdout, result } = op;
    void result
      .then(() => view.release())
      .catch((err: Error) => o.log.error({ err: err.message }, "releasing an intern's view failed"));
    await new Promise<void>((resolve) => {
      const go = () => {
        stdout.off('readable', go).off('error', go);
        resolve();
      };
      stdout.on('readable', go).on('error', go);
    });
    if (stdout.readableLength > 0)
      return { started: true, stream: tarOut(stdout, { maxBytes: limits.maxBytes, idleMs: limits.idleMs, result }) };
    stdout.destroy();
    return { started: false, r: await result };
  }

  return {
    async get(row, path, { tar }) {
      if (tar) return { type: 'tar', stream: await download(row, path), size: null };
      const out = spool();
      try {
        const args = ['get', path, String(limits.maxBytes), String(limits.maxEntries)];
        let r = await run(await readable(row), args, { stdout: out });
        // Its daemon stopped between the look and the read (it fell asleep): read its disk instead.
        if (!r.ok && r.kind === 'failed')
          r = await run(await readable((await getInternById(o.db, row.id)) ?? row), args, { stdout: out });
        if (!r.ok) throw refusal(r, path);
        if (r.type === 'directory') {
          const body = JSON.parse(readFileSync(out, 'utf8'));
          rmSync(out, { force: true });
          return { type: 'directory', body };
        }
        const size = statSync(out).size;
        return { type: 'file', stream: outbound(drain(out), { idleMs: limits.idleMs }), size };
      } catch (err) {
        rmSync(out, { force: true });
        throw err;
      }
    },
    async put(row, path, body, { tar, account, signal }) {
      const input = await take(body);
      try {
        if (tar) await checkTar(input, limits.maxEntries);
        const view = await writable(row, account, signal);
        const r = await run(view, tar ? ['unpack', path] : ['put', path, String(limits.maxBytes)], { stdin: input });
        if (!r.ok) throw refusal(r, path);
        return tar ? { path, type: 'directory' } : { path, type: 'file', size: r.size, created: r.created };
      } finally {
        rmSync(input, { force: true });
      }
    },
    checkRepositories: (list, field) => checkRepositories(list, o.git.hosts, field),
    cloneRepositories,
    place,
    async listRepositories(row) {
      const rows = await o.db.select().from(internRepositories).where(eq(internRepositories.internId, row.id));
      return rows.map(placedOf);
    },
    async diff(row, repoId, { account, signal }) {
      const w = await work(row, repoId, account, signal);
      const diff =
        w.commit === w.repo.baseCommit
          ? ''
          : await diffOf({ mirror: w.mirror, base: w.repo.baseCommit, commit: w.commit, timeoutMs: o.git.timeoutMs });
      return { id: w.repo.id, path: w.repo.path, base: w.repo.baseCommit, commit: w.commit, diff };
    },
    async push(row, repoId, { account, signal, branch }) {
      const name =
        branch ??
        `cohort/${row.name
          .toLowerCase()
          .replace(/[^a-z0-9._-]+/g, '-')
          .slice(0, 60)}-${Date.now().toString(36)}`;
      if (branchRefusal(name)) throw invalidRequest(`branch: "${name}" ${branchRefusal(name)}`);
      const w = await work(row, repoId, account, signal);
      const access = await accessFor({ orgId: row.orgId, workspaceId: row.workspaceId }, w.repo.url);
      try {
        if (!name.startsWith(access.branchPrefix))
          throw invalidRequest(
            `branch: "${name}" is outside the ${access.credential ? "credential's" : 'default'} scope: pushes create branches under ${access.branchPrefix}`,
          );
        if (w.commit === w.repo.baseCommit)
          throw repositoryConflict(
            `"${w.repo.path}" has no commits since ${w.repo.baseCommit.slice(0, 12)}: nothing to push`,
          );
        const pushed = await pushBranch({
          env: access.env,
          mirror: w.mirror,
          url: w.repo.url,
          commit: w.commit,
          branch: name,
          timeoutMs: o.git.timeoutMs,
        });
        if (!pushed.ok) {
          if (pushed.exists)
            throw repositoryConflict(`branch "${name}" already exists on the remote; pushes go to new branches only`);
          throw gitHostRefused(pushed.why);
        }
      } finally {
        access.release();
      }
      return { id: w.repo.id, path: w.repo.path, base: w.repo.baseCommit, commit: w.commit, branch: name };
    },
    async addRepositories(row, list, { account, signal, created, field }) {
      const set = await cloneRepositories(list, field, { orgId: row.orgId, workspaceId: row.workspaceId });
      try {
        return await place(row, set, { account, signal, created });
      } finally {
        set.release();
      }
    },
    async remove(row, path, { account, signal }) {
      const r = await run(await writable(row, account, signal), ['delete', path]);
      if (!r.ok) throw refusal(r, path);
      return { path, type: r.type };
    },
    async move(row, from, to, { account, signal }) {
      const r = await run(await writable(row, account, signal), ['move', from, to]);
      if (!r.ok) throw refusal(r, from);
      return { from, to, type: r.type };
    },
  };
}
