// Retention of the request log (docs/guides/observability.md): the operator's
// COHORT_REQUEST_LOG_RETENTION_DAYS removes rows older than that, and COHORT_IO_LOG_RETENTION_DAYS
// clears the request and response bodies I/O logging kept, older than that, keeping the row
// (usage and cost stay readable). 0 keeps them for good. A sweep runs at start and then every
// `everyMs` on each gateway (the work is idempotent: two gateways sweeping delete each row once),
// in batches so that one sweep never holds a long lock. The clock is injectable for tests.
import { and, inArray, isNotNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import { inferenceRequests as t } from '../store/schema-inference.ts';

const DAY_MS = 86_400_000;
const BATCH = 5_000;

export type RetentionOptions = {
  db: Db;
  log: Logger;
  /** Days a row is kept (0: for good). */
  rowsDays: number;
  /** Days logged bodies are kept (0: as long as their row). */
  bodiesDays: number;
  everyMs: number;
  now?: () => number;
};

export function createRetention(o: RetentionOptions) {
  const now = o.now ?? Date.now;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;

  /** Removes what is past its keeping; returns how many rows were deleted and how many lost their bodies. */
  async function sweep(): Promise<{ rows: number; bodies: number }> {
    let rows = 0;
    let bodies = 0;
    if (o.rowsDays > 0) {
      const before = new Date(now() - o.rowsDays * DAY_MS);
      for (;;) {
        const old = o.db.select({ id: t.id }).from(t).where(lt(t.createdAt, before)).limit(BATCH);
        const done = await o.db.delete(t).where(inArray(t.id, old)).returning({ id: t.id });
        rows += done.length;
        if (done.length < BATCH) break;
      }
    }
    if (o.bodiesDays > 0) {
      const before = new Date(now() - o.bodiesDays * DAY_MS);
      for (;;) {
        const old = o.db
          .select({ id: t.id })
          .from(t)
          .where(and(lt(t.createdAt, before), or(isNotNull(t.requestBody), isNotNull(t.responseBody))))
          .limit(BATCH);
        const done = await o.db
          .update(t)
          .set({ requestBody: sql`null`, responseBody: sql`null` })
          .where(inArray(t.id, old))
          .returning({ id: t.id });
        bodies += done.length;
        if (done.length < BATCH) break;
      }
    }
    if (rows || bodies) o.log.info({ rows, bodies }, 'the request log retention sweep removed old rows and bodies');
    return { rows, bodies };
  }

  const tick = () => {
    running ??= sweep()
      .catch((err: unknown) => o.log.warn({ err }, 'the request log retention sweep failed; it runs again later'))
      .finally(() => (running = null));
  };

  return {
    sweep,
    start() {
      if (!o.rowsDays && !o.bodiesDays) return;
      tick();
      timer = setInterval(tick, o.everyMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
