// The request log: one row per model request, written in batches off the hot path (a flush at
// most every 500 ms or 1000 rows, and on shutdown). On the embedded PGlite (in its own thread,
// whose time is shared by every query of the gateway) rows go in by COPY, several times cheaper
// per row than an INSERT; on PostgreSQL, as one array parameter per column, unnested into rows
// (about half the server's time per row of a JSON recordset: 10–12 µs against 18–22). Which
// requests keep their bodies is the workspace's I/O logging decision below.
import { getTableColumns } from 'drizzle-orm';
import { PgliteThread } from '../store/pglite-thread.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../log.ts';
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

function csvField(v: unknown, json: boolean): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const text = json ? JSON.stringify(v) : v instanceof Date ? v.toISOString() : String(v);
  return text.includes('"') ? '"' + text.replace(/"/g, '""') + '"' : '"' + text + '"';
}

const UNNEST = `insert into inference_requests (${COLUMN_LIST}) select * from unnest(${COLUMNS.map((c, i) => `$${i + 1}::${c.sqlType}[]`).join(', ')})`;

/** One array per column, in column order: NULL as null, JSON columns as their text. */
export function columnArrays(rows: InferenceRequestRow[]): unknown[][] {
  return COLUMNS.map((c) =>
    rows.map((row) => {
      const v = row[c.key];
      return v === undefined || v === null ? null : c.json ? JSON.stringify(v) : v;
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
  const client = (db as unknown as { $client: PgliteThread | { query(text: string, params: unknown[]): Promise<unknown> } }).$client;
  if (client instanceof PgliteThread) {
    return client.query(`copy inference_requests (${COLUMN_LIST}) from '/dev/blob' with (format csv)`, [], { blob: new Blob([toCsv(rows)]) });
  }
  return client.query(UNNEST, columnArrays(rows));
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
      for (let i = 0; i < rows.length; i += BATCH) {
        await insertMany(opts.db, rows.slice(i, i + BATCH)).catch((err: unknown) => opts.log.error({ err, rows: rows.length }, 'could not write the inference request log'));
      }
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
