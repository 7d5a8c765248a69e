// The request log: one row per model request, written in batches off the hot path (a flush at
// most every 500 ms or 1000 rows, and on shutdown). On the embedded PGlite (in its own thread,
// whose time is shared by every query of the gateway) rows go in by COPY, several times cheaper
// per row than an INSERT; on PostgreSQL, as one array parameter per column, unnested into rows
// (about half the server's time per row of a JSON recordset: 10–12 µs against 18–22). Which
// requests keep their bodies is the workspace's I/O logging decision below. A batch the database
// refuses for a value in it is split until only the rows it cannot write are lost.
import { getTableColumns } from 'drizzle-orm';
import { PgliteThread } from '../store/pglite-thread.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';

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

const UNNEST = `insert into inference_requests (${COLUMN_LIST}) select * from unnest(${COLUMNS.map((c, i) => `$${i + 1}::${c.sqlType}[]`).join(', ')})`;

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

function insertMany(db: Db, rows: InferenceRequestRow[]): Promise<unknown> {
  const client = (
    db as unknown as { $client: PgliteThread | { query(text: string, params: unknown[]): Promise<unknown> } }
  ).$client;
  if (client instanceof PgliteThread) {
    return client.query(`copy inference_requests (${COLUMN_LIST}) from '/dev/blob' with (format csv)`, [], {
      blob: new Blob([toCsv(rows)]),
    });
  }
  return client.query(UNNEST, columnArrays(rows));
}

/** Refused for a value of a row (a data exception, class 22, or a constraint, class 23), so the
 * batch's other rows can still be written. Anything else (the database gone) would fail them too. */
function isRowFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/** Writes the rows; a batch refused for a row's value is halved until the rows that cannot be
 * written are alone, and each of those is logged by id (never with its bodies). */
async function write(db: Db, log: Logger, rows: InferenceRequestRow[]): Promise<void> {
  try {
    await insertMany(db, rows);
  } catch (err) {
    if (!isRowFault(err)) return log.error({ err, rows: rows.length }, 'could not write the inference request log');
    if (rows.length === 1) {
      const { code, message } = err as { code: string; message?: string };
      return log.error(
        { id: rows[0]!.id, code, reason: message },
        'could not write a row of the inference request log; it is lost',
      );
    }
    const half = rows.length >> 1;
    await write(db, log, rows.slice(0, half));
    await write(db, log, rows.slice(half));
  }
}

export type RequestLog = { add(row: InferenceRequestRow): void; flush(): Promise<void>; close(): Promise<void> };

export function createRequestLog(opts: { db: Db; log: Logger }): RequestLog {
  let queue: InferenceRequestRow[] = [];
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    const rows = queue;
    queue = [];
    writing = writing.then(async () => {
      for (let i = 0; i < rows.length; i += BATCH) await write(opts.db, opts.log, rows.slice(i, i + BATCH));
    });
    return writing;
  }

  return {
    add(row) {
      queue.push(row);
      if (queue.length >= BATCH) void flush();
      else timer ??= setTimeout(() => void flush(), FLUSH_MS);
    },
    flush,
    close: flush,
  };
}
