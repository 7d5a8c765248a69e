// One operation of the files API (docs/guides/files.md) on an intern's work folder, run by
// files.ts inside the intern's own view, as the intern's uid, with no capability: the gateway
// never follows a path the tenant controls. Its working directory is the intern's disk root; its
// paths arrive relative to work/ and already checked by the gateway (no `..`, no absolute path,
// no empty component). Here every existing component is looked at without following it: a
// symbolic link, a device, a fifo or a socket on the way is refused, naming it. What it produces
// goes to stdout (a file's bytes, a listing); its outcome is the last line of stderr, one JSON
// object: {ok: true, ...} or {ok: false, kind, path}. A refusal writes nothing to stdout. A
// folder's download is not here but in files-pack.ts, and a folder's upload in files-unpack.ts
// (which keep the same contract), but for the upload's merge into a folder that exists.
// Plain JavaScript with node built-ins only: it runs from the source tree and from dist/ alike.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';

const WORK = 'work';
const CHUNK = 1 << 20;

class Refusal extends Error {
  constructor(kind, path) {
    super(kind);
    this.kind = kind;
    this.path = path;
  }
}

const done = (o) => process.stderr.write(`\n${JSON.stringify(o)}\n`);
const lstat = (p) => {
  try {
    return lstatSync(p);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
};
const typeOf = (st) =>
  st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'special';
const parts = (rel) => (rel === '' ? [] : rel.split('/'));
const abs = (rel) => (rel === '' ? WORK : `${WORK}/${rel}`);

/** Checks the folders leading to `rel` (not `rel` itself): each a real folder, made if missing
 * when `create`. */
function parents(rel, o) {
  const p = parts(rel);
  const root = lstat(WORK);
  if (!root?.isDirectory()) throw new Refusal(root ? 'symlink' : 'missing', '');
  for (let i = 1; i < p.length; i++) {
    const sub = p.slice(0, i).join('/');
    let st = lstat(abs(sub));
    if (!st && o.create) {
      try {
        mkdirSync(abs(sub), { mode: 0o755 });
      } catch (err) {
        if (err.code !== 'EEXIST') throw err;
      }
      st = lstat(abs(sub));
    }
    if (!st) throw new Refusal('missing', sub);
    if (st.isSymbolicLink()) throw new Refusal('symlink', sub);
    if (!st.isDirectory()) throw new Refusal(st.isFile() ? 'not_folder' : 'special', sub);
  }
}

/** `rel` itself, looked at without following it; a link or a special file is refused. */
function target(rel, o = {}) {
  parents(rel, o);
  const st = lstat(abs(rel));
  if (!st) return null;
  const type = typeOf(st);
  if (type === 'symlink' && !o.links) throw new Refusal('symlink', rel);
  if (type === 'special') throw new Refusal('special', rel);
  return { st, type };
}

/** Copies everything from `from` to `to` (file descriptors); stops past `max` bytes. */
function copy(from, to, max) {
  const buf = Buffer.allocUnsafe(CHUNK);
  let total = 0;
  for (;;) {
    const n = readSync(from, buf, 0, CHUNK, null);
    if (n === 0) return total;
    total += n;
    if (total > max) throw new Refusal('too_large', '');
    for (let off = 0; off < n; ) off += writeSync(to, buf, off, n - off);
  }
}

/** A file's bytes, or a folder's entries (at most `maxEntries`, by name). */
function get(rel, maxBytes, maxEntries) {
  const t = target(rel);
  if (!t) throw new Refusal('missing', rel);
  if (t.type === 'directory') {
    const names = readdirSync(abs(rel)).sort();
    const entries = [];
    for (const name of names.slice(0, maxEntries)) {
      const st = lstat(`${abs(rel)}/${name}`);
      if (!st) continue;
      const type = typeOf(st);
      entries.push({
        name,
        type,
        size: type === 'file' ? st.size : null,
        modified_at: Math.floor(st.mtimeMs / 1000),
      });
    }
    const body = JSON.stringify({ path: rel, type: 'directory', entries, truncated: names.length > maxEntries });
    writeSync(1, body);
    return done({ ok: true, type: 'directory' });
  }
  if (t.st.size > maxBytes) throw new Refusal('too_large', rel);
  // O_NOFOLLOW and O_NONBLOCK: a link or a fifo swapped in since the look above opens nothing.
  const fd = openSync(abs(rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.ino !== t.st.ino || st.dev !== t.st.dev) throw new Refusal('changed', rel);
    const size = copy(fd, 1, maxBytes);
    done({ ok: true, type: 'file', size });
  } finally {
    closeSync(fd);
  }
}

/** Writes stdin to `rel` (its folders made as needed), whole or not at all: a temporary file
 * beside it, renamed over it. */
function put(rel, maxBytes) {
  if (rel === '') throw new Refusal('is_folder', rel);
  const t = target(rel, { create: true });
  if (t?.type === 'directory') throw new Refusal('is_folder', rel);
  const p = parts(rel);
  const dir = abs(p.slice(0, -1).join('/'));
  const tmp = `${dir}/.${p.at(-1).slice(0, 200)}.cohort-${randomBytes(6).toString('hex')}`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    const size = copy(0, fd, maxBytes);
    closeSync(fd);
    renameSync(tmp, abs(rel));
    done({ ok: true, type: 'file', size, created: !t });
  } catch (err) {
    try {
      closeSync(fd);
    } catch {}
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Removes `rel`: a file, a link itself (never what it names), or a folder and all it holds. */
function remove(rel) {
  if (rel === '') throw new Refusal('is_root', rel);
  const t = target(rel, { links: true });
  if (!t) throw new Refusal('missing', rel);
  if (t.type === 'directory') rmSync(abs(rel), { recursive: true });
  else unlinkSync(abs(rel));
  done({ ok: true, type: t.type });
}

/** Renames `from` to `to`, which must not exist (its folders are made as needed). */
function move(from, to) {
  if (from === '' || to === '') throw new Refusal('is_root', '');
  const t = target(from, { links: true });
  if (!t) throw new Refusal('missing', from);
  if (target(to, { create: true, links: true })) throw new Refusal('exists', to);
  if (to === from || to.startsWith(`${from}/`)) throw new Refusal('into_itself', to);
  renameSync(abs(from), abs(to));
  done({ ok: true, type: t.type });
}

const TAR = ['--numeric-owner', '--no-acls', '--no-xattrs', '--no-selinux'];

/** Runs GNU tar on this process's stdin and stdout; its outcome is the result. */
function tar(args, ok) {
  const child = spawn('tar', args, { stdio: ['inherit', 'inherit', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  child.on('close', (code) => {
    if (ok.includes(code))
      return done({ ok: true, type: 'tar', warnings: err.trim().split('\n').filter(Boolean).slice(0, 20) });
    done({ ok: false, kind: 'tar', path: '', detail: err.trim().split('\n').slice(-3).join('; ').slice(0, 500) });
    process.exitCode = 3;
  });
}

/** Unpacks the tar stream on stdin (checked by the gateway: files and folders only, every file's
 * folders before it, nothing climbing out) into the folder `rel`, made as needed (`fresh`: which
 * must not exist). Its folder
 * entries come first, so GNU tar replaces a link planted where the archive has a folder instead
 * of following it. */
function unpack(rel, fresh) {
  const t = target(rel, { create: true });
  if (t && fresh) throw new Refusal('exists', rel);
  if (t && t.type !== 'directory') throw new Refusal('not_folder', rel);
  if (!t) mkdirSync(abs(rel), { mode: 0o755 });
  tar(
    [
      '--extract',
      '--file=-',
      ...TAR,
      '--no-same-owner',
      '--no-same-permissions',
      '--no-overwrite-dir',
      '--delay-directory-restore',
      '-C',
      abs(rel),
    ],
    [0],
  );
}

/** The staging folders of folder uploads: the disk root's, which the gateway makes (root's,
 * 0711: the tenant can neither list nor swap what is in it), one per upload (the intern's). */
const UPLOADS = '.uploads';

/** Moves a folder's upload, unpacked by GNU tar into the staging folder .uploads/<name> and
 * passed by the gateway (files-unpack.ts, which moves it alone into a target it makes), into the
 * folder `rel` that exists: merged as GNU tar would unpack it there. A file where the folder holds
 * a folder with something in it refuses the whole upload before anything is moved. What is left
 * of the staging folder is removed. */
function merge(name, rel) {
  if (!/^[0-9a-f]{24}$/.test(name)) throw new Error(`bad staging folder ${name}`);
  const staged = `${UPLOADS}/${name}`;
  try {
    const t = target(rel);
    if (!t) throw new Refusal('missing', rel);
    if (t.type !== 'directory') throw new Refusal('not_folder', rel);
    const conflict = mergeConflict(staged, abs(rel), rel);
    if (conflict) throw new Refusal('is_folder', conflict);
    moveInto(staged, abs(rel));
    done({ ok: true, type: 'directory' });
  } finally {
    for (const entry of readdirSync(staged)) rmSync(`${staged}/${entry}`, { recursive: true, force: true });
  }
}

/** The first entry of the folder `from` that cannot take the place of what `to` holds (a file
 * where a folder with something in it is), named below the upload's `rel`; null if none. */
function mergeConflict(from, to, rel) {
  for (const name of readdirSync(from)) {
    const here = lstat(`${to}/${name}`);
    if (!here?.isDirectory()) continue;
    const path = rel === '' ? name : `${rel}/${name}`;
    if (lstatSync(`${from}/${name}`).isDirectory()) {
      const deeper = mergeConflict(`${from}/${name}`, `${to}/${name}`, path);
      if (deeper) return deeper;
    } else if (readdirSync(`${to}/${name}`).length > 0) return path;
  }
  return null;
}

/** Moves the entries of the folder `from` into the folder `to`, as GNU tar would unpack them
 * there: a folder into a folder merges; a file replaces what is there (an empty folder too); a
 * folder where a file or a link is replaces it, so that nothing is written through a link. */
function moveInto(from, to) {
  for (const name of readdirSync(from)) {
    const src = `${from}/${name}`;
    const dst = `${to}/${name}`;
    const here = lstat(dst);
    if (here && lstatSync(src).isDirectory()) {
      if (here.isDirectory()) {
        moveInto(src, dst);
        continue;
      }
      unlinkSync(dst);
    } else if (here?.isDirectory()) rmdirSync(dst);
    renameSync(src, dst);
  }
}

const ERRNO = {
  ENOSPC: 'no_space',
  EDQUOT: 'no_space',
  EFBIG: 'too_large',
  EACCES: 'denied',
  EPERM: 'denied',
  ENOTDIR: 'changed',
  ELOOP: 'symlink',
  ENAMETOOLONG: 'too_long',
  EINVAL: 'into_itself',
};

// What it makes is the intern's as `git clone` or an editor would make it (files 0644, folders
// 0755), whatever the gateway's umask.
process.umask(0o022);
const [op, ...args] = process.argv.slice(2);
try {
  if (op === 'get') get(args[0], Number(args[1]), Number(args[2]));
  else if (op === 'put') put(args[0], Number(args[1]));
  else if (op === 'delete') remove(args[0]);
  else if (op === 'move') move(args[0], args[1]);
  else if (op === 'unpack') unpack(args[0], args[1] === 'fresh');
  else if (op === 'merge') merge(args[0], args[1]);
  else throw new Error(`unknown operation ${op}`);
} catch (err) {
  fail(err, args[0] ?? '');
}

/** Answers an operation's failure: a refusal by its kind, an error by its errno's, naming `path`. */
function fail(err, path) {
  process.exitCode = 3;
  if (err instanceof Refusal) done({ ok: false, kind: err.kind, path: err.path });
  else if (ERRNO[err.code]) done({ ok: false, kind: ERRNO[err.code], path });
  else done({ ok: false, kind: 'failed', path: '', detail: String(err.message).slice(0, 300) });
}
