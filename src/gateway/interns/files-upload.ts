// A folder's upload (PUT ?format=tar): the request's tar stream checked entry by entry
// (tarRefusal) as it arrives, each chunk passed on to GNU tar only once checked, which unpacks it
// meanwhile into a staging folder of the intern's disk (provisioner/files.ts's stageUpload); its
// entries are moved into the target only once the whole stream has passed. A refused stream is cut
// where its refusal is found, and the staging folder goes with everything in it.
// May import: files-context.ts, files-checks.ts, tar-headers.ts, the error registry, the store's intern type, the provisioner's files, node built-ins.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { invalidRequest } from '../errors.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { refusalOf, tarRefusal } from './files-checks.ts';
import { boundedBody, type FilesContext, writableView } from './files-context.ts';
import { stageUpload } from './provisioner/files.ts';
import { TarHeaders, TarStreamError } from './tar-headers.ts';

/** Unpacks the request's tar stream into the folder `path` (made as needed), checked as it
 * arrives. The intern is woken (if asleep) before the body is read. */
export async function uploadFolder(
  c: FilesContext,
  o: { row: InternRow; account: string; signal: AbortSignal; path: string; body: Readable | undefined },
): Promise<{ path: string; type: 'directory' }> {
  const view = await writableView(c, o);
  try {
    const up = await stageUpload({ view: view.view, uid: view.uid, rel: o.path });
    const check = tarCheck(c.limits.maxEntries);
    // What stops the stream other than the body's own refusal (its bound, an entry: ours) is told
    // by the outcome below: the target refused, tar gone, the client gone.
    let refusal: Error | null = null;
    let failure: unknown = null;
    const stop = new AbortController();
    void up.ended.then(() => stop.abort());
    const body = boundedBody({ maxBytes: c.limits.maxBytes, inspect: check.write });
    try {
      await pipeline(o.body ?? Readable.from([]), body.stream, up.stdin, { signal: stop.signal });
      refusal = await check.end();
    } catch (err) {
      refusal = body.refusal();
      failure = err;
    }
    const r = await up.finish(!refusal && !failure);
    if (refusal) throw refusal;
    // Aborted: what stopped the stream is the answer (the client gone); any other outcome is its own.
    if (!r.ok && !(failure && r.kind === 'aborted'))
      throw refusalOf(r, { fallback: o.path, maxBytes: c.limits.maxBytes, log: c.log });
    if (failure) throw failure;
    return { path: o.path, type: 'directory' };
  } finally {
    await view.release();
  }
}

/** A tar stream's check, written a chunk at a time: uncompressed, at most `maxEntries` entries,
 * each refused by tarRefusal naming it. write() answers the refusal found so far (null while
 * none); end() the stream's whole verdict. */
export function tarCheck(maxEntries: number): { write(chunk: Buffer): Error | null; end(): Promise<Error | null> } {
  const dirs = new Set<string>();
  let entries = 0;
  let refusal: Error | null = null;
  // Each entry is told within headers.write, so write() answers a refusal before its chunk is
  // passed on (tested: files-upload.test.ts).
  const headers = new TarHeaders((e) => {
    if (refusal) return;
    if (++entries > maxEntries)
      refusal = invalidRequest(`body: the tar stream holds more than ${maxEntries} entries (COHORT_FILES_MAX_ENTRIES)`);
    const why = refusal ? null : tarRefusal(e.path, e.type, dirs);
    if (why) refusal = invalidRequest(`body: tar entry "${e.path}" is ${why}`);
  });
  const read = (f: () => void) => {
    try {
      f();
    } catch (err) {
      if (!(err instanceof TarStreamError)) throw err;
      refusal ??= invalidRequest(`body: not a tar stream we unpack: ${err.message}`);
    }
  };
  const head: number[] = [];
  return {
    write(chunk) {
      // Checked first, however the stream is cut: GNU tar would unpack a gzip stream itself.
      for (let i = 0; head.length < 2 && i < chunk.length; i++) head.push(chunk[i]!);
      if (head[0] === 0x1f && head[1] === 0x8b)
        refusal ??= invalidRequest('body: a compressed tar stream; send it uncompressed (tar -c, not tar -cz)');
      if (!refusal) read(() => headers.write(chunk));
      return refusal;
    },
    async end() {
      if (!refusal) read(() => headers.end());
      return refusal;
    },
  };
}
