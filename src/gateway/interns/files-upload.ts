// A folder's upload (PUT ?format=tar): the request's tar stream checked entry by entry
// (tarRefusal) as it is written to its spool file, in the one pass that receives it, then
// unpacked by GNU tar from that file in the intern's view (files-op.mjs's unpack). A refused
// stream is cut where its refusal is found, and nothing of it is unpacked.
// May import: files-context.ts, files-checks.ts, the error registry, the store's intern type, node built-ins, tar.
import { rmSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { Parser } from 'tar';
import { invalidRequest } from '../errors.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { refusalOf, tarRefusal } from './files-checks.ts';
import { type FilesContext, runIn, takeBody, writableView } from './files-context.ts';

/** Unpacks the request's tar stream into the folder `path` (made as needed), checked as it is
 * spooled. */
export async function uploadFolder(
  c: FilesContext,
  o: { row: InternRow; account: string; signal: AbortSignal; path: string; body: Readable | undefined },
): Promise<{ path: string; type: 'directory' }> {
  const check = tarCheck(c.limits.maxEntries);
  const input = await takeBody({
    body: o.body,
    spoolDir: c.spoolDir,
    maxBytes: c.limits.maxBytes,
    inspect: check.write,
  });
  try {
    const refusal = await check.end();
    if (refusal) throw refusal;
    const r = await runIn(await writableView(c, o), { args: ['unpack', o.path], stdin: input });
    if (!r.ok) throw refusalOf(r, { fallback: o.path, maxBytes: c.limits.maxBytes, log: c.log });
    return { path: o.path, type: 'directory' };
  } finally {
    rmSync(input, { force: true });
  }
}

/** A tar stream's check, written a chunk at a time: uncompressed, at most `maxEntries` entries,
 * each refused by tarRefusal naming it. write() answers the refusal found so far (null while
 * none); end() the stream's whole verdict. */
function tarCheck(maxEntries: number): { write(chunk: Buffer): Error | null; end(): Promise<Error | null> } {
  const dirs = new Set<string>();
  let entries = 0;
  let refusal: Error | null = null;
  const parser = new Parser({
    strict: true,
    zstd: false,
    brotli: false,
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
  const broken = (err: Error) => invalidRequest(`body: not a tar stream (${err.message.slice(0, 200)})`);
  parser.on('error', (err: Error) => (refusal ??= broken(err)));
  const head: number[] = [];
  return {
    write(chunk) {
      // Checked before the parser sees it, which would unpack a gzip stream itself.
      for (let i = 0; head.length < 2 && i < chunk.length; i++) head.push(chunk[i]!);
      if (head[0] === 0x1f && head[1] === 0x8b)
        refusal ??= invalidRequest('body: a compressed tar stream; send it uncompressed (tar -c, not tar -cz)');
      if (!refusal) parser.write(chunk);
      return refusal;
    },
    async end() {
      if (refusal) return refusal;
      const ended = new Promise<void>((resolve) => {
        parser.once('end', resolve);
        parser.once('error', () => resolve());
      });
      parser.end();
      await ended;
      return refusal;
    },
  };
}
