// The request log: one row per model request, written in batches off the hot path (a flush at
// most every 100 ms or 500 rows, and on shutdown). Which requests keep their bodies is the
// workspace's I/O logging decision below.
import type { Db } from '../store/db.ts';
import type { Logger } from '../log.ts';
import { inferenceRequests, type InferenceRequestRow } from '../store/schema-inference.ts';

const FLUSH_MS = 100;
const BATCH = 500;

export type IoLogging = { enabled: boolean; samplingRate: number; apiKeyIds: string[] | null };

/** Bodies are stored when I/O logging is on, the key passes the filter (if any) and the sample hits. */
export function shouldStoreBodies(io: IoLogging, opts: { apiKeyId: string; random: number }): boolean {
  if (!io.enabled) return false;
  if (io.apiKeyIds?.length && !io.apiKeyIds.includes(opts.apiKeyId)) return false;
  return opts.random < io.samplingRate;
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
        await opts.db
          .insert(inferenceRequests)
          .values(rows.slice(i, i + BATCH))
          .catch((err: unknown) => opts.log.error({ err, rows: rows.length }, 'could not write the inference request log'));
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
