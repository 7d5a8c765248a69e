// A folder's download (docs/guides/files.md, "A folder's download"): a script of C programs
// (provisioner/files-pack.ts) walks the folder in the intern's view (bounds, refused before a byte
// is sent) while GNU tar writes it to a socket that this process reads ahead meanwhile and relays
// once the walk has passed (files-relay.ts). And how a file's download goes to a client once its
// response has begun (outbound): failed rather than short, stopped when idle.
// May import: files-context.ts, files-checks.ts, files-relay.ts, the provisioner's pack, the error registry, node built-ins.
import type { ServerResponse } from 'node:http';
import { pipeline as pipelineCb, Transform, type Readable } from 'node:stream';
import { fileTooLarge, internalError } from '../errors.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { refusalOf } from './files-checks.ts';
import { type FilesContext, freshReadableView, readableView } from './files-context.ts';
import { BufferPool, Relay } from './files-relay.ts';
import type { InternView } from './provisioner/index.ts';
import { packStream, type FileOpResult } from './provisioner/files.ts';

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

/** A folder's tar whose walk has passed: sent to a response whose head is written. */
export type TarDownload = { send(res: ServerResponse): void };

type Packing = { started: true; relay: Relay; result: Promise<FileOpResult> } | { started: false; r: FileOpResult };

/** The buffers that downloads read into and write from: 256 KiB (a read takes what the socket
 * holds, some 200 KiB), at most 8 MiB of them kept unused. */
const pool = new BufferPool({ bytes: 256 << 10, keep: 32 });

/** What of a pack's stream is read ahead, at most, while its walk has not yet passed: GNU tar
 * writes beside the walk (the time that saves is what this lets it write meanwhile), but on two
 * cores, reading more than this took time from the walk without shortening the download. */
const READ_AHEAD_BYTES = 1 << 20;

/** The folder `path` as a tar stream made while it is sent, or the refusal of its walk. */
export async function downloadFolder(
  c: FilesContext,
  { row, path }: { row: InternRow; path: string },
): Promise<TarDownload> {
  let op = await packing(c, { view: await readableView(c, row), rel: path });
  // Its daemon stopped between the look and the read (it fell asleep): read its disk instead.
  if (!op.started && !op.r.ok && op.r.kind === 'failed')
    op = await packing(c, { view: await freshReadableView(c, row), rel: path });
  if (op.started) {
    const { relay, result } = op;
    return {
      send: (res) =>
        relay.send(res, {
          maxBytes: c.limits.maxBytes,
          idleMs: c.limits.idleMs,
          ended: result.then((r) =>
            r.ok ? null : new Error(`the tar stream failed while it was sent (${r.detail ?? r.kind})`),
          ),
          failed: (err) => c.log.warn({ reason: err.message }, "a folder's download failed while it was sent"),
        }),
    };
  }
  if (op.r.ok) throw internalError();
  const { maxBytes, maxEntries } = c.limits;
  if (op.r.kind === 'too_large')
    throw fileTooLarge(
      `the folder "${op.r.path || '.'}" as a tar stream exceeds the files API's limit of ${maxBytes} bytes (COHORT_FILES_MAX_MB)`,
    );
  if (op.r.kind === 'too_many')
    throw fileTooLarge(
      `the folder "${op.r.path || '.'}" holds more than ${maxEntries} entries (COHORT_FILES_MAX_ENTRIES)`,
    );
  throw refusalOf(op.r, { fallback: path, maxBytes, log: c.log });
}

/** Starts the pack in the view (released when it ends) and waits for its walk's verdict (or its
 * end), its stream read ahead meanwhile (at most READ_AHEAD_BYTES): relayed once the walk has
 * passed, dropped with the tar when refused. */
async function packing(c: FilesContext, { view, rel }: { view: InternView; rel: string }): Promise<Packing> {
  const relay = new Relay({ pool, aheadBytes: READ_AHEAD_BYTES });
  let op: Awaited<ReturnType<typeof packStream>>;
  try {
    op = await packStream({ view: view.view, uid: view.uid, rel, ...c.limits, onread: relay.onread });
  } catch (err) {
    await view.release();
    throw err;
  }
  const { stdout, passed, result } = op;
  relay.attach(stdout);
  void result
    .then(() => view.release())
    .catch((err: Error) => c.log.error({ err: err.message }, "releasing an intern's view failed"));
  // The job's end settles it too: a walk that passed said so before it ended, but the two come by
  // different ways, and the result is the truth.
  const ended = await Promise.race([passed.then(() => null), result]);
  if (ended === null || ended.ok) return { started: true, relay, result };
  relay.drop();
  return { started: false, r: ended };
}
