// The files API's operations on one path (docs/guides/files.md): a file's bytes or a folder's
// listing read, a file written or a folder's tar unpacked, a path removed or moved. Each runs in
// the intern's view (files-context.ts); bytes cross in spool files of the data dir's own (0600,
// removed once used). A folder's upload is files-upload.ts's, its download files-download.ts's.
// May import: files-context.ts, files-checks.ts, files-download.ts, files-upload.ts, the provisioner's result type, node built-ins.
import { readFileSync, rmSync, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { InternRow } from '../store/schema-interns.ts';
import { refusalOf } from './files-checks.ts';
import {
  drain,
  type FilesContext,
  freshReadableView,
  readableView,
  runIn,
  spoolPath,
  takeBody,
  writableView,
} from './files-context.ts';
import { outbound } from './files-download.ts';
import { uploadFolder } from './files-upload.ts';
import type { FileOpResult } from './provisioner/files.ts';

/** A change's request: the intern, who asks (for a wake), and the request's signal. */
type Change = { row: InternRow; account: string; signal: AbortSignal };

/** The error for an operation's refusal naming `path`. */
const refused = (c: FilesContext, r: FileOpResult & { ok: false }, path: string) =>
  refusalOf(r, { fallback: path, maxBytes: c.limits.maxBytes, log: c.log });

/** A file's bytes (streamed from a spool file) or a folder's listing. */
export async function readPath(
  c: FilesContext,
  { row, path }: { row: InternRow; path: string },
): Promise<{ type: 'directory'; body: unknown } | { type: 'file'; stream: Readable; size: number }> {
  const out = spoolPath(c.spoolDir);
  try {
    const args = ['get', path, String(c.limits.maxBytes), String(c.limits.maxEntries)];
    let r = await runIn(await readableView(c, row), { args, stdout: out });
    // Its daemon stopped between the look and the read (it fell asleep): read its disk instead.
    if (!r.ok && r.kind === 'failed') r = await runIn(await freshReadableView(c, row), { args, stdout: out });
    if (!r.ok) throw refused(c, r, path);
    if (r.type === 'directory') {
      const body = JSON.parse(readFileSync(out, 'utf8'));
      rmSync(out, { force: true });
      return { type: 'directory', body };
    }
    const size = statSync(out).size;
    return { type: 'file', stream: outbound(drain(out), { idleMs: c.limits.idleMs }), size };
  } catch (err) {
    rmSync(out, { force: true });
    throw err;
  }
}

/** Writes the body to a file, or (tar) unpacks it, checked as it comes, into a folder. */
export async function writePath(
  c: FilesContext,
  o: Change & { path: string; body: Readable | undefined; tar: boolean },
): Promise<{ path: string; type: string; size?: number; created?: boolean }> {
  if (o.tar) return uploadFolder(c, o);
  const input = await takeBody({ body: o.body, spoolDir: c.spoolDir, maxBytes: c.limits.maxBytes });
  try {
    const r = await runIn(await writableView(c, o), { args: ['put', o.path, String(c.limits.maxBytes)], stdin: input });
    if (!r.ok) throw refused(c, r, o.path);
    return { path: o.path, type: 'file', size: r.size, created: r.created };
  } finally {
    rmSync(input, { force: true });
  }
}

export async function removePath(
  c: FilesContext,
  o: Change & { path: string },
): Promise<{ path: string; type: string }> {
  const r = await runIn(await writableView(c, o), { args: ['delete', o.path] });
  if (!r.ok) throw refused(c, r, o.path);
  return { path: o.path, type: r.type };
}

export async function movePath(
  c: FilesContext,
  o: Change & { from: string; to: string },
): Promise<{ from: string; to: string; type: string }> {
  const r = await runIn(await writableView(c, o), { args: ['move', o.from, o.to] });
  if (!r.ok) throw refused(c, r, o.from);
  return { from: o.from, to: o.to, type: r.type };
}
