// A folder's upload (PUT ?format=tar): the request's tar stream checked entry by entry as it
// arrives (tarRefusal) and passed on, as it is checked, to files-op.mjs's unpack-stream in the
// intern's view, which GNU tar unpacks into a staging folder there; the whole stream passed, the
// gateway says so ('K') and the staging folder becomes the target. Nothing of a refused stream
// stays: the gateway ends the stream without 'K' and waits for files-op.mjs to have removed the
// staging folder before it answers. Bytes reach the unpacker only once every header before them
// has been checked (the parser reads each chunk's headers as it is written), so GNU tar never
// sees an entry the check refused.
// May import: files-context.ts, files-checks.ts, the provisioner's files, the error registry, node built-ins, tar.
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { Parser } from 'tar';
import { invalidRequest } from '../errors.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { bodyTooLarge, refusalOf, tarRefusal } from './files-checks.ts';
import { type FilesContext, writableView } from './files-context.ts';
import { fileOpFed } from './provisioner/files.ts';

/** Unpacks the request's tar stream into the folder `path` (made as needed), checked as it comes. */
export async function uploadFolder(
  c: FilesContext,
  o: { row: InternRow; account: string; signal: AbortSignal; path: string; body: Readable | undefined },
): Promise<{ path: string; type: 'directory' }> {
  const view = await writableView(c, o);
  try {
    const op = await fileOpFed({ view: view.view, uid: view.uid, args: ['unpack-stream', o.path] });
    const refusal = await sendChecked(o.body, op.stdin, c.limits);
    const r = await op.result;
    if (refusal) throw refusal;
    if (!r.ok) throw refusalOf(r, { fallback: o.path, maxBytes: c.limits.maxBytes, log: c.log });
    return { path: o.path, type: 'directory' };
  } finally {
    await view.release();
  }
}

/** A frame of files-op.mjs's unpack-stream: 'D' and a length before each run of bytes. */
function frame(chunk: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = 0x44;
  head.writeUInt32BE(chunk.length, 1);
  return head;
}
const COMMIT = Buffer.from('K');

/** Sends `body` to `out` in frames as the check passes it, then 'K'; the refusal if any (`out`
 * then ends without 'K'). `out` breaking (the operation refused, or tar failed) ends the send
 * without a refusal of its own: the operation's outcome says why. */
async function sendChecked(
  body: Readable | undefined,
  out: Writable,
  limits: { maxBytes: number; maxEntries: number },
): Promise<Error | null> {
  let broken = false;
  out.on('error', () => (broken = true));
  const check = tarCheck(limits.maxEntries);
  let total = 0;
  let refusal: Error | null = null;
  for await (const chunk of (body ?? []) as AsyncIterable<Buffer>) {
    total += chunk.length;
    refusal = total > limits.maxBytes ? bodyTooLarge(limits.maxBytes) : check.write(chunk);
    if (refusal || broken || out.destroyed) break;
    out.write(frame(chunk));
    if (!out.write(chunk)) await Promise.race([once(out, 'drain'), once(out, 'close')]);
  }
  refusal ??= broken || out.destroyed ? null : await check.end();
  if (refusal || broken || out.destroyed) out.destroy();
  else out.end(COMMIT);
  return refusal;
}

/** A tar stream's check, written a chunk at a time: uncompressed, at most `maxEntries` entries,
 * each refused by tarRefusal naming it. write() checks every header the chunk completes before it
 * returns, and answers the refusal (null while none); end() the stream's whole verdict. */
export function tarCheck(maxEntries: number): { write(chunk: Buffer): Error | null; end(): Promise<Error | null> } {
  const dirs = new Set<string>();
  let entries = 0;
  const seen = 0;
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
