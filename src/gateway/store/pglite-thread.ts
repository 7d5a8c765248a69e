// The gateway's handle on the embedded PGlite, which runs in its own worker thread
// (pglite-worker.ts): the part of PGlite's client that Drizzle and the store use (query, exec,
// transaction, close), each call one message there and one back. Row values cross as structured
// clones; a database error keeps its fields (code, constraint, …), so callers tell errors apart
// as before. Query parsers are applied as identity for the types they name, which is all Drizzle
// asks (it keeps dates as text and parses them itself). The thread's end fails every later call
// and, unless close() ended it, is reported as the database's loss.
// May import: ./pglite-worker (as a worker), src/shared/entry.ts, node.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../shared/entry.ts';
import type { Results } from '@electric-sql/pglite';

export type Call = {
  id: number;
  op: 'query' | 'exec' | 'begin' | 'commit' | 'rollback' | 'close';
  /** The open transaction the call belongs to (for begin: the one it opens). */
  tx?: number;
  sql?: string;
  params?: unknown[];
  rowMode?: 'array' | 'object';
  parsers?: number[];
  blob?: Blob;
};
export type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: Record<string, unknown> };

type QueryOptions = { rowMode?: 'array' | 'object'; parsers?: Record<number, unknown>; blob?: Blob };
export type PgliteTx = {
  query<T>(sql: string, params?: unknown[], opts?: QueryOptions): Promise<Results<T>>;
  exec(sql: string): Promise<Results[]>;
};

export class PgliteThread implements PgliteTx {
  /** Resolves once the database is open (PGlite's own name for it). */
  readonly waitReady: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private seq = 0;
  private txSeq = 0;
  /** Why the thread is gone, once it is: later calls fail at once. */
  private gone: Error | null = null;
  /** From ready until close() begins; the thread ending meanwhile is a loss, not a shutdown. */
  private open = false;

  /** `onLost`: called once if the thread ends while open (a crash, running out of memory), never by close(). */
  constructor(opts: { dir?: string; onLost?: (err: Error) => void } = {}) {
    this.worker = startWorker(import.meta.url, './pglite-worker', { dir: opts.dir });
    this.worker.unref();
    this.waitReady = this.expect(0).then(() => {
      this.open = true;
    });
    this.worker.on('message', (r: Reply) => this.settle(r));
    // An uncaught error in the thread comes just before its exit, and says why it ended.
    let crash: Error | undefined;
    this.worker.on('error', (err) => this.failAll((crash = err)));
    this.worker.on('exit', (code) => {
      this.failAll(
        (this.gone = new Error(`the database thread exited (code ${code})${crash ? `: ${crash.message}` : ''}`)),
      );
      if (this.open) opts.onLost?.(this.gone);
    });
  }

  /** On the database itself; a transaction's handle is the same pair bound to it. */
  readonly query: PgliteTx['query'] = this.on().query;
  readonly exec: PgliteTx['exec'] = this.on().exec;

  /** Runs `fn` in a transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(fn: (tx: PgliteTx) => Promise<T>): Promise<T> {
    const tx = ++this.txSeq;
    await this.call({ op: 'begin', tx });
    let result: T;
    try {
      result = await fn(this.on(tx));
    } catch (err) {
      await this.call({ op: 'rollback', tx });
      throw err;
    }
    await this.call({ op: 'commit', tx });
    return result;
  }

  async close(): Promise<void> {
    if (this.gone) return;
    this.open = false;
    await this.call({ op: 'close' });
    await this.worker.terminate();
  }

  /** query and exec on the database (no tx) or in the open transaction `tx`. */
  private on(tx?: number): PgliteTx {
    return {
      query: (sql, params = [], opts = {}) =>
        this.call({
          op: 'query',
          tx,
          sql,
          params,
          rowMode: opts.rowMode,
          parsers: opts.parsers && Object.keys(opts.parsers).map(Number),
          blob: opts.blob,
        }) as never,
      exec: (sql) => this.call({ op: 'exec', tx, sql }) as never,
    };
  }

  private call(c: Omit<Call, 'id'>): Promise<unknown> {
    if (this.gone) return Promise.reject(this.gone);
    const id = ++this.seq;
    this.worker.postMessage({ ...c, id });
    return this.expect(id);
  }

  /** The thread keeps the process alive only while a call waits for its answer. */
  private expect(id: number): Promise<unknown> {
    if (!this.pending.size) this.worker.ref();
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  private settle(r: Reply): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (!this.pending.size) this.worker.unref();
    if (r.ok) p.resolve(r.value);
    else p.reject(Object.assign(new Error(String(r.error.message)), r.error));
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
