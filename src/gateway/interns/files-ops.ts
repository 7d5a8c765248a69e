// The files API's operations on one path (docs/guides/files.md): a file's bytes or a folder's
// listing read, a file written or a folder's tar unpacked, a path removed or moved. Each runs in
// the intern's view (files-context.ts); bytes cross in spool files of the data dir's own (0600,
// removed once used). A folder's tar is checked entry by entry before anything is unpacked
// (tarRefusal); a folder's download is files-download.ts's.
// May import: files-context.ts, files-checks.ts, files-download.ts, the provisioner's result type, the error registry, node built-ins, tar.
import { closeSync, openSync, readFileSync, readSync, rmSync, createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Parser } from 'tar';
import { invalidRequest } from '../errors.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { refusalOf, tarRefusal } from './files-checks.ts';
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

/** Writes the body to a file, or (tar) unpacks it, checked first, into a folder. */
export async function writePath(
  c: FilesContext,
  o: Change & { path: string; body: Readable | undefined; tar: boolean },
): Promise<{ path: string; type: string; size?: number; created?: boolean }> {
  const input = await takeBody({ body: o.body, spoolDir: c.spoolDir, maxBytes: c.limits.maxBytes });
  try {
    if (o.tar) await checkTar({ file: input, maxEntries: c.limits.maxEntries });
    const args = o.tar ? ['unpack', o.path] : ['put', o.path, String(c.limits.maxBytes)];
    const r = await runIn(await writableView(c, o), { args, stdin: input });
    if (!r.ok) throw refused(c, r, o.path);
    return o.tar
      ? { path: o.path, type: 'directory' }
      : { path: o.path, type: 'file', size: r.size, created: r.created };
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

/** Reads a spooled tar stream whole: uncompressed, at most `maxEntries` entries, each refused
 * by tarRefusal naming it. */
async function checkTar(o: { file: string; maxEntries: number }): Promise<void> {
  const head = Buffer.alloc(2);
  const fd = openSync(o.file, 'r');
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
      if (!refusal && entries > o.maxEntries)
        refusal = invalidRequest(
          `body: the tar stream holds more than ${o.maxEntries} entries (COHORT_FILES_MAX_ENTRIES)`,
        );
      const why = refusal ? null : tarRefusal(e.path, e.type, dirs);
      if (why) refusal = invalidRequest(`body: tar entry "${e.path}" is ${why}`);
      e.resume();
    },
  });
  try {
    await pipeline(createReadStream(o.file), parser);
  } catch (err) {
    throw refusal ?? invalidRequest(`body: not a tar stream (${(err as Error).message.slice(0, 200)})`);
  }
  if (refusal) throw refusal;
}
