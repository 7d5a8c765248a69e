// The files API's pure checks (docs/guides/files.md): a request's path against the bounds, a
// folder upload's tar entries, and the error each refusal of an operation in the intern's view
// (provisioner/files-op.mjs, files-pack.ts) answers with. Tested by table (files.test.ts,
// files-checks.test.ts).
// May import: the error registry, the provisioner's result type, the logger's type.
import type { Logger } from '../../shared/log.ts';
import { fileConflict, fileNotFound, filePathRefused, fileTooLarge, internalError, invalidRequest } from '../errors.ts';
import type { FileOpResult } from './provisioner/files.ts';

/** Bounds of a path below the work folder: bytes in all, bytes of one name, folders deep. */
export const MAX_PATH_BYTES = 1024;
export const MAX_NAME_BYTES = 255;
export const MAX_DEPTH = 64;

/** Why `path` (relative to the work folder, '' for the folder itself) cannot be used, or null. Each
 * of a folder upload's entries is checked here: one pass over the path, its names' bytes counted
 * only where a name may be too long. */
export function pathRefusal(path: string): string | null {
  let nul = false;
  let ascii = true;
  let parts = 1;
  let dotdot = false;
  let emptyOrDot = false;
  let longName = false;
  let start = 0;
  let nameAscii = true;
  for (let i = 0; i <= path.length; i++) {
    const c = i < path.length ? path.charCodeAt(i) : 0x2f;
    if (c === 0) nul = true;
    else if (c >= 0x80) ascii = nameAscii = false;
    if (c !== 0x2f) continue;
    if (i < path.length) parts++;
    const len = i - start;
    const dot = path.charCodeAt(start) === 0x2e;
    if (len === 0 || (len === 1 && dot)) emptyOrDot = true;
    else if (len === 2 && dot && path.charCodeAt(start + 1) === 0x2e) dotdot = true;
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    else if (
      len > MAX_NAME_BYTES ||
      (!nameAscii && len * 3 > MAX_NAME_BYTES && Buffer.byteLength(path.slice(start, i)) > MAX_NAME_BYTES)
    )
      longName = true;
    start = i + 1;
    nameAscii = true;
  }
  if (nul) return 'contains a NUL byte';
  if ((ascii ? path.length : Buffer.byteLength(path)) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (path === '') return null;
  if (path.startsWith('/')) return 'is absolute: paths are relative to the work folder /intern/work';
  if (parts > MAX_DEPTH) return `is deeper than ${MAX_DEPTH} folders`;
  if (dotdot) return 'climbs out of the work folder with ..';
  if (emptyOrDot) return 'has an empty or . component';
  if (longName) return `has a name longer than ${MAX_NAME_BYTES} bytes`;
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
  let from = 0;
  while (raw.startsWith('./', from)) from += 2;
  let to = raw.length;
  while (to > from && raw.charCodeAt(to - 1) === 0x2f) to--;
  const path = raw.slice(from, to);
  if (path === '.' || path === '') return type === 'Directory' ? null : 'the folder itself as a file';
  const why = pathRefusal(path);
  if (why) return `a path that ${why}`;
  if (type !== 'Directory' && !FILE_TYPES.has(type)) return TYPE_NAMES[type] ?? `an entry of type ${type}`;
  const slash = path.lastIndexOf('/');
  const parent = slash === -1 ? '' : path.slice(0, slash);
  if (parent && !dirs.has(parent)) return `a path whose folder "${parent}" is not an entry before it`;
  if (type === 'Directory') dirs.add(path);
  return null;
}

/** A refusal's error by its kind, given the path it names (never empty: '.' for the work folder). */
const REFUSALS: Record<string, (p: string, maxBytes: number) => Error> = {
  missing: (p) => fileNotFound(p),
  symlink: (p) => filePathRefused(p, 'is a symbolic link: the files API follows no link'),
  special: (p) => filePathRefused(p, 'is a device, fifo or socket: only files and folders are handled'),
  not_folder: (p) => fileConflict(p, 'is a file, not a folder'),
  is_folder: (p) => fileConflict(p, 'is a folder; upload a folder with ?format=tar'),
  exists: (p) => fileConflict(p, 'already exists'),
  into_itself: (p) => filePathRefused(p, 'cannot be moved into itself'),
  is_root: () => filePathRefused('', 'is the work folder itself, which cannot be removed or moved'),
  too_large: (p, max) => fileTooLarge(`"${p}" exceeds the files API's limit of ${max} bytes (COHORT_FILES_MAX_MB)`),
  too_long: (p) => filePathRefused(p, "is too long for the intern's disk"),
  no_space: () => fileTooLarge("the intern's disk is full"),
  denied: (p) => fileConflict(p, "cannot be read or written by the intern's own user (its permissions)"),
  changed: (p) => fileConflict(p, 'changed while it was handled; retry'),
};

/** The error for what an operation answered when it refused, naming its path (or `fallback`, the
 * request's); an outcome of no known kind is logged and answered as an internal error. */
export function refusalOf(
  r: FileOpResult & { ok: false },
  o: { fallback: string; maxBytes: number; log: Pick<Logger, 'error'> },
): Error {
  if (r.kind === 'tar')
    return invalidRequest(`body: the tar stream could not be unpacked (${r.detail ?? 'tar failed'})`);
  const known = Object.hasOwn(REFUSALS, r.kind) ? REFUSALS[r.kind] : undefined;
  if (known) return known(r.path || o.fallback || '.', o.maxBytes);
  o.log.error({ detail: r.detail }, 'files operation failed');
  return internalError();
}
