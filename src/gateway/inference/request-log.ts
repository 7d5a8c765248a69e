// The request log: one row per model request, written in batches off the hot path (a flush at
// most every 500 ms or 1000 rows, and on shutdown). On the embedded PGlite (in its own thread,
// whose time is shared by every query of the gateway) rows go in by COPY, several times cheaper
// per row than an INSERT; on PostgreSQL, as one array parameter per column, unnested into rows
// (about half the server's time per row of a JSON recordset: 10–12 µs against 18–22). Which
// requests keep their bodies is the workspace's I/O logging decision below.
//
// No row is dropped for a passing fault (docs/failure-modes.md): usage and cost are charged from
// these rows. A batch the store does not take (a lost connection, a full disk, the database
// down) stays queued, in order, and is tried again, a quarter second later and then every two
// seconds; a retry that may repeat a write already made (the connection died after the commit)
// skips rows the store holds, by id. When the store has failed for five seconds, or the memory
// queue passes COHORT_REQUEST_LOG_QUEUE rows, the queue spills to `<data dir>/request-log/`
// (request-log-spill.ts), written back once the store takes rows again (by this gateway or the
// next to start on the data dir); at shutdown what the store has not taken within five seconds
// spills too. A batch the store refuses for a value in it is split until only the rows it can
// never write are left: those, and rows neither the store nor the disk would take, are lost,
// each logged by id (never with its bodies) and counted by reason for /metrics.
import { getTableColumns } from 'drizzle-orm';
import { PgliteThread } from '../store/pglite-thread.ts';
import type { Db } from '../store/db.ts';
import { scrub, type Logger } from '../../shared/log.ts';
import { readSpilled, removeSpilled, spilledFiles, spillRows } from './request-log-spill.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';
import { binaryCopyEncoder } from './copy-binary.ts';

const FLUSH_MS = 500;
const BATCH = 1000;

export type IoLogging = { enabled: boolean; samplingRate: number; apiKeyIds: string[] | null };

/** Bodies are stored when I/O logging is on, the key passes the filter (if any) and the sample hits. */
export function shouldStoreBodies(io: IoLogging, opts: { apiKeyId: string; random: number }): boolean {
  if (!io.enabled) return false;
  if (io.apiKeyIds?.length && !io.apiKeyIds.includes(opts.apiKeyId)) return false;
  return opts.random < io.samplingRate;
}

const COLUMNS = Object.entries(getTableColumns(inferenceRequests)).map(([key, col]) => ({
  key: key as keyof InferenceRequestRow,
  name: col.name,
  sqlType: col.getSQLType(),
  json: col.dataType === 'json',
}));
const COLUMN_LIST = COLUMNS.map((c) => c.name).join(', ');

// What a caller sends or a provider answers is logged as given, except what PostgreSQL cannot
// store: U+0000 in text (22021), and in jsonb the \u0000 escape (22P05) or an unpaired
// surrogate's (22P02). One such value would fail its whole batch, so each becomes U+FFFD, as a
// UTF-8 encoder already makes an unpaired surrogate in a text column. The log is a record, not a
// replay: a marked replacement keeps lengths and shows where the character was. Each check is one
// indexOf first: almost no value holds one, and this runs for every request.
const storableText = (s: string) => (s.indexOf('\0') === -1 ? s : s.replaceAll('\0', '\uFFFD'));

/** JSON.stringify writes U+0000 and unpaired surrogates as \u escapes (a pair is written as it is).
 * A \u after an even run of backslashes (none included) is such an escape; after an odd run, the
 * backslash is itself escaped and the rest is text. */
const UNSTORABLE_ESCAPE = /(?<=(?:^|[^\\])(?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g;
function storableJson(v: unknown): string {
  const text = JSON.stringify(v);
  return text.indexOf('\\u') === -1 ? text : text.replace(UNSTORABLE_ESCAPE, '\\ufffd');
}

function csvField(v: unknown, json: boolean): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const text = json ? storableJson(v) : v instanceof Date ? v.toISOString() : storableText(String(v));
  return text.includes('"') ? '"' + text.replace(/"/g, '""') + '"' : '"' + text + '"';
}

const UNNEST = `insert into inference_requests (${COLUMN_LIST}) select * from unnest(${COLUMNS.map((c, i) => `$${i + 1}::${c.sqlType}[]`).join(', ')}) on conflict (id) do nothing`;

/** One array per column, in column order: NULL as null, JSON columns as their text. */
export function columnArrays(rows: InferenceRequestRow[]): unknown[][] {
  return COLUMNS.map((c) =>
    rows.map((row) => {
      const v = row[c.key];
      return v === undefined || v === null
        ? null
        : c.json
          ? storableJson(v)
          : typeof v === 'string'
            ? storableText(v)
            : v;
    }),
  );
}

/** One CSV line per row, NULL as an empty unquoted field. Loops, not map and join: this runs for every request. */
export function toCsv(rows: InferenceRequestRow[]): string {
  let out = '';
  for (const row of rows) {
    for (let i = 0; i < COLUMNS.length; i++) {
      const c = COLUMNS[i]!;
      out += (i ? ',' : '') + csvField(row[c.key], c.json);
    }
    out += '\n';
  }
  return out;
}

/** A batch in the binary form, or null when a value needs the text form. Exported for its test. */
export const toCopyBinary = binaryCopyEncoder(COLUMNS, { text: storableText, json: storableJson });

/** Once a row may already be in the store (a retry, a replay), it is skipped there by id. On
 * PGlite, a batch goes in PostgreSQL's binary form, which its thread takes for about a third less
 * than CSV (docs/performance-log.md); a batch holding a value only the text form carries goes as CSV. */
function insertMany(db: Db, rows: InferenceRequestRow[], idempotent: boolean): Promise<unknown> {
  const client = (
    db as unknown as { $client: PgliteThread | { query(text: string, params: unknown[]): Promise<unknown> } }
  ).$client;
  if (client instanceof PgliteThread && !idempotent) {
    const binary = toCopyBinary(rows);
    const format = binary ? 'binary' : 'csv';
    return client.query(`copy inference_requests (${COLUMN_LIST}) from '/dev/blob' with (format ${format})`, [], {
      blob: new Blob([binary ?? toCsv(rows)]),
    });
  }
  return client.query(UNNEST, columnArrays(rows));
}

const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** Refused for a value of a row (a data exception, class 22, or a constraint, class 23), so the
 * batch's other rows can still be written. Anything else (the database gone) would fail them too. */
export function isRowFault(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23'));
}

/** The store is out of room or failing its disk (insufficient resources, class 53, such as
 * 53100 disk_full; system errors, class 58, such as 58030 io_error): it cannot write at all,
 * which readiness reports. Other failures (a lost connection) are the connection's, not the store's. */
export function isStoreFull(err: unknown): boolean {
  const code = codeOf(err);
  if (code?.startsWith('53') || code?.startsWith('58')) return true;
  return /No space left on device|ENOSPC/.test(err instanceof Error ? err.message : String(err));
}

/** The wait before the next try of a batch the store did not take. */
export const retryDelayMs = (attempt: number, o: { firstMs: number; maxMs: number }) =>
  Math.min(o.maxMs, o.firstMs * 2 ** attempt);

/** Why rows were lost for good: the store refused a value of theirs; memory was full and the disk
 * refused the spill; the shutdown could neither write nor spill them; a spilled line did not parse. */
export type LostReason = 'refused' | 'overflow' | 'shutdown' | 'unreadable';

export type RequestLog = {
  add(row: InferenceRequestRow): void;
  /** Writes what is queued now; resolves once it is written, or once the store refused it (it stays queued). */
  flush(): Promise<void>;
  /** Writes what is queued, for at most `closeMs`; what is left spills to disk (or is lost, counted). */
  close(): Promise<void>;
  /** Why the store cannot write now (it refused the last batch for room or its disk), or null. */
  writeFault(): string | null;
  /** Rows waiting: in memory, and spilled to disk. */
  pending(): { memory: number; disk: number };
};

export type RequestLogOptions = {
  db: Db;
  log: Logger;
  /** Where rows wait on disk (`<data dir>/request-log`); absent: they wait in memory only. */
  spillDir?: string;
  /** Rows kept in memory while the store refuses them, before they spill (twice this: lost, counted). */
  maxQueued?: number;
  /** How long close() keeps writing before it spills what is left. */
  closeMs?: number;
  /** How long the store may fail before the queue spills. */
  spillAfterMs?: number;
  retry?: { firstMs: number; maxMs: number };
  onLost?: (reason: LostReason, rows: number) => void;
  /** One failed write of a batch (it is retried). */
  onWriteError?: () => void;
};

type Waiter = { mark: number; resolve: () => void };

export function createRequestLog(o: RequestLogOptions): RequestLog {
  const { db, log } = o;
  const maxQueued = o.maxQueued ?? 50_000;
  const closeMs = o.closeMs ?? 5_000;
  const spillAfterMs = o.spillAfterMs ?? 5_000;
  const retry = o.retry ?? { firstMs: 250, maxMs: 2_000 };
  let queue: InferenceRequestRow[] = [];
  /** The batch being written (kept for the shutdown to spill if it never gets through). */
  let current: InferenceRequestRow[] | null = null;
  let timer: NodeJS.Timeout | null = null;
  let pumping: Promise<void> | null = null;
  let urgent = false;
  /** The first failure of the store's current outage; null while writes succeed. */
  let failingSince: number | null = null;
  let fault: string | null = null;
  let spillRefused = false;
  let closing: { deadline: number } | null = null;
  let added = 0;
  let settled = 0;
  let waiters: Waiter[] = [];
  let onDisk = 0;
  let replayDue = false;
  if (o.spillDir) {
    for (const f of spilledFiles(o.spillDir)) {
      replayDue = true;
      onDisk += readSpilled(f)?.rows.length ?? 0;
    }
  }

  const settle = (n: number) => {
    settled += n;
    if (!waiters.length) return;
    const done = waiters.filter((w) => w.mark <= settled);
    waiters = waiters.filter((w) => w.mark > settled);
    for (const w of done) w.resolve();
  };
  const releaseWaiters = () => {
    for (const w of waiters.splice(0)) w.resolve();
  };

  function lost(reason: LostReason, rows: InferenceRequestRow[], detail: Record<string, unknown>, why: string) {
    o.onLost?.(reason, rows.length);
    for (let i = 0; i < rows.length; i += 1000)
      log.error({ ...detail, reason, ids: rows.slice(i, i + 1000).map((r) => r.id) }, why);
  }

  function failed(err: unknown, rows: number) {
    o.onWriteError?.();
    const message = scrub(err instanceof Error ? err.message : String(err)).slice(0, 300);
    fault = isStoreFull(err) ? message : null;
    if (failingSince !== null) return;
    failingSince = Date.now();
    log.warn(
      { reason: message, code: codeOf(err), rows: rows + queue.length },
      'the store did not take the inference request log; its rows are kept and retried',
    );
  }

  function recovered() {
    fault = null;
    spillRefused = false;
    if (failingSince === null) return;
    log.info({ afterMs: Date.now() - failingSince }, 'the inference request log is written again');
    failingSince = null;
  }

  /** Moves the memory queue to disk: it is past its bound, or the store has failed for a while. */
  function spillIfDue(): void {
    if (!o.spillDir || !queue.length) return;
    const longFailing = failingSince !== null && Date.now() - failingSince >= spillAfterMs;
    if (queue.length < maxQueued && !longFailing) return;
    const rows = queue;
    try {
      spillRows(o.spillDir, rows);
    } catch (err) {
      if (!spillRefused)
        log.warn(
          { reason: scrub((err as Error).message), rows: rows.length },
          'could not spill the inference request log to disk; its rows stay in memory',
        );
      spillRefused = true;
      return;
    }
    queue = queue === rows ? [] : queue.slice(rows.length);
    onDisk += rows.length;
    replayDue = true;
    settle(rows.length);
  }

  let wake: (() => void) | null = null;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    }).finally(() => (wake = null));

  /** Writes the rows: true once each is written or lost for good, false if the shutdown gave up on them. */
  async function persist(rows: InferenceRequestRow[], idempotent: boolean): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await insertMany(db, rows, idempotent || attempt > 0);
        recovered();
        return true;
      } catch (err) {
        if (isRowFault(err)) {
          recovered();
          if (rows.length === 1) {
            const { code, message } = err as { code: string; message?: string };
            lost(
              'refused',
              rows,
              { id: rows[0]!.id, code, why: message },
              'could not write a row of the inference request log; it is lost',
            );
            return true;
          }
          const half = rows.length >> 1;
          return (
            (await persist(rows.slice(0, half), idempotent || attempt > 0)) &&
            (await persist(rows.slice(half), idempotent || attempt > 0))
          );
        }
        failed(err, rows.length);
        releaseWaiters();
        if (closing && Date.now() >= closing.deadline) return false;
        spillIfDue();
        await pause(retryDelayMs(attempt, retry));
        if (closing && Date.now() >= closing.deadline) return false;
      }
    }
  }

  /** Rows spilled earlier (by this gateway or one before it on the data dir), one file a round. */
  async function replayOne(): Promise<void> {
    const [file] = spilledFiles(o.spillDir!);
    if (!file) {
      replayDue = false;
      onDisk = 0;
      return;
    }
    const got = readSpilled(file);
    if (got?.unreadable) {
      o.onLost?.('unreadable', got.unreadable);
      log.error(
        { file, lines: got.unreadable },
        'lines of a spilled inference request log could not be read; they are lost',
      );
    }
    for (let i = 0; got && i < got.rows.length; i += BATCH) {
      if (!(await persist(got.rows.slice(i, i + BATCH), true))) return;
    }
    removeSpilled(file);
    onDisk = Math.max(0, onDisk - (got?.rows.length ?? 0));
    if (got?.rows.length)
      log.info({ file, rows: got.rows.length }, 'wrote spilled inference request log rows to the store');
  }

  /** One round: the rows queued when it began, in batches; then, with none waiting, one spilled file. */
  async function run(): Promise<void> {
    // A store slower than the rows come (none failing): past its bound the queue waits on disk.
    if (queue.length >= maxQueued) spillIfDue();
    for (let n = queue.length; n > 0 && queue.length; ) {
      const batch = queue.splice(0, Math.min(BATCH, n));
      n -= batch.length;
      current = batch;
      const done = await persist(batch, false);
      current = null;
      if (!done) {
        queue = batch.concat(queue);
        return;
      }
      settle(batch.length);
    }
    if (replayDue && !queue.length && !closing && failingSince === null) await replayOne();
  }

  function kick(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pumping) {
      urgent = true;
      return;
    }
    urgent = false;
    pumping = run()
      .catch((err: unknown) => log.error({ err }, 'the inference request log writer failed'))
      .finally(() => {
        pumping = null;
        if (closing) return;
        if (urgent || queue.length >= BATCH || (replayDue && failingSince === null)) kick();
        else if (queue.length) timer ??= setTimeout(kick, FLUSH_MS);
      });
  }

  if (replayDue) setImmediate(kick);

  return {
    add(row) {
      if (queue.length + (current?.length ?? 0) >= 2 * maxQueued) {
        lost('overflow', [row], {}, 'the inference request log queue is full and the disk refused it; a row is lost');
        return;
      }
      queue.push(row);
      added++;
      if (pumping) return;
      if (queue.length >= BATCH) kick();
      else timer ??= setTimeout(kick, FLUSH_MS);
    },
    flush() {
      if (!queue.length && !current) return Promise.resolve();
      const done = new Promise<void>((resolve) => waiters.push({ mark: added, resolve }));
      kick();
      return done;
    },
    async close() {
      closing = { deadline: Date.now() + closeMs };
      if (timer) clearTimeout(timer);
      timer = null;
      const drained = (async () => {
        while ((queue.length || pumping) && Date.now() < closing!.deadline) {
          if (!pumping) kick();
          await pumping;
        }
      })();
      let t: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise((r) => (t = setTimeout(r, closeMs + retry.maxMs)))]);
      clearTimeout(t);
      wake?.();
      // What the store did not take in time: a batch under way may still land, so its replay skips what did.
      const left = [...(current ?? []), ...queue];
      queue = [];
      releaseWaiters();
      if (!left.length) return;
      try {
        if (!o.spillDir) throw new Error('no data dir to spill to');
        spillRows(o.spillDir, left);
        log.warn(
          { rows: left.length, dir: o.spillDir },
          'the store did not take the inference request log before shutdown; its rows wait on disk for the next start',
        );
      } catch (err) {
        lost(
          'shutdown',
          left,
          { why: scrub((err as Error).message) },
          'could not write or spill the inference request log at shutdown; rows are lost',
        );
      }
    },
    writeFault: () => fault,
    pending: () => ({ memory: queue.length + (current?.length ?? 0), disk: onDisk }),
  };
}
