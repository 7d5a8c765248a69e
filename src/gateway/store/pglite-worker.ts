// The worker thread that owns the embedded PGlite: PostgreSQL's engine runs here, off the
// gateway's event loop, so a query or the request log's COPY never holds up a stream or another
// request. Answers pglite-thread.ts's calls one message each (protocol there); PGlite itself
// queues a query behind an open transaction, as it does in-process.
// May import: ./pglite-options, node.
import { parentPort, workerData } from 'node:worker_threads';
import type { Transaction } from '@electric-sql/pglite';
import { loadPglite, PGLITE_OPTIONS } from './pglite-options.ts';
import type { Call, Reply } from './pglite-thread.ts';

const port = parentPort!;
const { PGlite } = await loadPglite();
const db = new PGlite((workerData as { dir?: string }).dir, PGLITE_OPTIONS);
await db.waitReady;

/** What the caller's parsers are for: drizzle passes identity parsers, keeping dates as text. */
const identity = (types: number[] | undefined) =>
  types ? Object.fromEntries(types.map((t) => [t, (v: string) => v])) : undefined;

type PGliteLike = Pick<Transaction, 'query' | 'exec'>;
type Open = { tx: Transaction; finish: (commit: boolean) => void; ended: Promise<void> };
const open = new Map<number, Open>();
const ROLLBACK = Symbol('rollback');

/** Starts a transaction and resolves once it is open; it stays open until commit or rollback. */
function begin(id: number): Promise<void> {
  return new Promise((entered, failed) => {
    let finish: (commit: boolean) => void = () => {};
    const ended = db
      .transaction((tx) => {
        const done = new Promise<void>(
          (resolve, reject) => (finish = (commit) => (commit ? resolve() : reject(ROLLBACK))),
        );
        open.set(id, { tx, finish, ended });
        entered();
        return done;
      })
      .catch((err: unknown) => {
        if (err !== ROLLBACK) throw err;
      });
    ended.catch(failed);
  });
}

async function end(id: number, commit: boolean): Promise<void> {
  const t = open.get(id);
  if (!t) throw new Error(`no open transaction ${id}`);
  open.delete(id);
  t.finish(commit);
  await t.ended;
}

/** The database, or the open transaction a call belongs to. */
function target(tx: number | undefined): PGliteLike {
  const t = tx === undefined ? db : open.get(tx)?.tx;
  if (!t) throw new Error(`no open transaction ${tx}`);
  return t;
}

async function run(c: Call): Promise<unknown> {
  switch (c.op) {
    case 'query':
      return target(c.tx).query(c.sql!, c.params, { rowMode: c.rowMode, parsers: identity(c.parsers), blob: c.blob });
    case 'exec':
      return target(c.tx).exec(c.sql!);
    case 'begin':
      return begin(c.tx!);
    case 'commit':
      return end(c.tx!, true);
    case 'rollback':
      return end(c.tx!, false);
    case 'close':
      return db.close();
  }
}

/** A database error's fields (code, constraint, detail, …) survive the trip; its stack is the caller's. */
function errorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  return {
    ...Object.fromEntries(Object.entries(err).filter(([, v]) => typeof v !== 'function' && typeof v !== 'object')),
    name: err.name,
    message: err.message,
  };
}

port.on('message', (c: Call) => {
  run(c).then(
    (value) => port.postMessage({ id: c.id, ok: true, value } satisfies Reply),
    (err: unknown) => port.postMessage({ id: c.id, ok: false, error: errorFields(err) } satisfies Reply),
  );
});
port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies Reply);
