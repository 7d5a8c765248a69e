// What the parts of the files service (files.ts) share: their dependencies, the intern's view
// opened for a read or a change, one operation run in it, and the spool files bytes cross in.
// Every operation runs inside the intern's own view as its uid (provisioner/files.ts runs
// provisioner/files-op.mjs there), never by this process following a path the tenant controls.
// Reads work on a sleeping or stopped intern without waking it (its disk mounted read-only);
// writes wake a sleeping one and refuse a stopped one.
// May import: files-checks.ts, the provisioner interface, the fleet, the store's interns, the error registry, types of the logger and the sealer, node built-ins.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import { fileNotFound, internNotReady } from '../errors.ts';
import type { Db } from '../store/db.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { bodyTooLarge } from './files-checks.ts';
import type { Fleet } from './hibernation.ts';
import { getInternById } from './interns.ts';
import type { InternView, Provisioner } from './provisioner/index.ts';
import { fileOp, type FileOpResult } from './provisioner/files.ts';

/** `idleMs`: a download whose client takes nothing for this long is aborted (outbound). */
export type FilesLimits = { maxBytes: number; maxEntries: number; idleMs: number };
/** Where the gateway clones from (COHORT_GIT_HOSTS) and how long a clone may take. */
export type GitOptions = { hosts: string[]; timeoutMs: number };

export type FilesContext = {
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
};

/** The intern's view for a read: its disk as it is, awake or not. */
export async function readableView(c: FilesContext, row: InternRow): Promise<InternView> {
  const view = await c.provisioner.openView({ id: row.id, pid: row.daemonPid }, { write: false });
  // A created intern that never started has no disk yet: its work folder is empty.
  if (!view) throw fileNotFound('.');
  return view;
}

/** The view for a read again, when its daemon stopped between the look and the read (it fell
 * asleep): its disk is read instead. */
export const freshReadableView = async (c: FilesContext, row: InternRow) =>
  readableView(c, (await getInternById(c.db, row.id)) ?? row);

/** The intern's view for a change: awake, woken if asleep; a stopped intern is refused. */
export async function writableView(
  c: FilesContext,
  o: { row: InternRow; account: string; signal: AbortSignal },
): Promise<InternView> {
  const now = (await getInternById(c.db, o.row.id)) ?? o.row;
  if (now.status !== 'running')
    throw internNotReady(now.status, 'provision it to change its files (its files can be read meanwhile)');
  const open = (pid: number | null) => c.provisioner.openView({ id: o.row.id, pid }, { write: true });
  const view = await open(now.daemonPid);
  if (view) return view;
  await c.fleet.target(now, o.account, o.signal);
  const woken = await getInternById(c.db, o.row.id);
  const again = woken ? await open(woken.daemonPid) : null;
  if (!again) throw internNotReady(woken?.status ?? 'deleted', 'retry shortly');
  return again;
}

/** Runs one operation of files-op.mjs in `view`, which is released after it. */
export async function runIn(
  view: InternView,
  o: { args: string[]; stdin?: string; stdout?: string },
): Promise<FileOpResult> {
  try {
    return await fileOp({ view: view.view, uid: view.uid, ...o });
  } finally {
    await view.release();
  }
}

/** A fresh spool file's path in the data dir's spool folder (0700). */
export function spoolPath(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return join(dir, randomBytes(12).toString('hex'));
}

/** The spool file as a stream, gone from the disk once opened. */
export function drain(file: string): Readable {
  const s = createReadStream(file);
  s.once('open', () => rmSync(file, { force: true }));
  s.once('close', () => rmSync(file, { force: true }));
  return s;
}

/** A stream of the request body that refuses it past `maxBytes` and stops it at the refusal
 * `inspect` answers, which sees each chunk before it is passed on (a refused chunk is not);
 * `refusal()` tells its own refusal from what else stopped the stream. */
export function boundedBody(o: { maxBytes: number; inspect?: (chunk: Buffer) => Error | null }): {
  stream: Transform;
  refusal(): Error | null;
} {
  let total = 0;
  let refusal: Error | null = null;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      total += chunk.length;
      refusal = total > o.maxBytes ? bodyTooLarge(o.maxBytes) : (o.inspect?.(chunk) ?? null);
      cb(refusal, chunk);
    },
  });
  return { stream, refusal: () => refusal };
}

/** The request body into a spool file (0600), refused past `maxBytes`. */
export async function takeBody(o: { body: Readable | undefined; spoolDir: string; maxBytes: number }): Promise<string> {
  const file = spoolPath(o.spoolDir);
  const out = createWriteStream(file, { mode: 0o600, flags: 'wx' });
  try {
    if (o.body) await pipeline(o.body, boundedBody({ maxBytes: o.maxBytes }).stream, out);
    else await new Promise<void>((resolve, reject) => out.once('error', reject).end(resolve));
  } catch (err) {
    // A body refused at its first chunk may end the pipeline before the file is even open: it is
    // removed once closed, not before (where its late open would make it again).
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    rmSync(file, { force: true });
    throw err;
  }
  return file;
}
