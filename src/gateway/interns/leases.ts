// Work on an intern that one gateway holds, and its takeover when that gateway dies
// (docs/failure-modes.md). Moves of a running intern to and from sleep (hibernation.ts) hold a
// lease the same way; a chat that finds one lapsed takes the move over at once. A provision or a deletion runs in the gateway that accepted it, in the
// background; the intern's record names that gateway (`lease_owner`) and holds a lease
// (`lease_until`, by the database's clock) that the gateway renews every third of
// COHORT_GATEWAY_LEASE_MS while it works. Every gateway looks every third of the lease for work
// whose lease has lapsed and claims it with a compare-and-set (so exactly one takes it over),
// then runs it again from the start: a provision stops whatever the dead gateway had started and
// starts the daemon; a deletion removes what is left.
//
// A gateway judges other gateways' leases only after its own renewals have succeeded for a whole
// lease without a break: after a database outage every lease looks lapsed, including those of
// gateways that are alive and only could not renew, and each gets a lease's time to renew first.
// May import: store (schema, db), interns.ts, node built-ins.
import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { interns, type InternRow, type InternStatus } from '../store/schema-interns.ts';
import { forgetRunning, leaseEnd } from './interns.ts';

/** The statuses that are work a gateway holds, and what a takeover does with each. */
export const HELD: Partial<Record<InternStatus, 'provision' | 'delete'>> = {
  provisioning: 'provision',
  destroying: 'delete',
};
const HELD_STATUSES = Object.keys(HELD) as InternStatus[];

/** Whether a gateway may take over others' lapsed leases: its own renewals have succeeded without
 * a break since `healthySince`, for at least a whole lease. */
export const mayJudge = (o: { healthySince: number | null; now: number; leaseMs: number }): boolean =>
  o.healthySince !== null && o.now - o.healthySince >= o.leaseMs;

/** What a gateway does about a held intern it found lapsed: take it over, unless it runs that
 * work itself (its renewals failed, but the work goes on here) or may not judge yet. */
export function takeoverOf(o: {
  status: InternStatus;
  runningHere: boolean;
  judging: boolean;
}): 'provision' | 'delete' | null {
  if (o.runningHere || !o.judging) return null;
  return HELD[o.status] ?? null;
}

/** A lease that has lapsed; a held row without one (from before leases) once untouched for a lease. */
const lapsed = (ms: number) =>
  or(
    lt(interns.leaseUntil, sql`now()`),
    and(isNull(interns.leaseUntil), lt(interns.updatedAt, sql`now() - ${ms} * interval '1 millisecond'`)),
  );

/** Extends this gateway's leases (held work, and moves of running interns to or from sleep); the number renewed. */
export async function renewLeases(db: Db, o: { owner: string; ms: number }): Promise<number> {
  const rows = await db
    .update(interns)
    .set({ leaseUntil: leaseEnd(o.ms) })
    .where(
      and(
        eq(interns.leaseOwner, o.owner),
        or(
          inArray(interns.status, HELD_STATUSES),
          and(eq(interns.status, 'running'), inArray(interns.power, ['sleeping', 'waking'])),
        ),
      ),
    )
    .returning({ id: interns.id });
  return rows.length;
}

/** The intern's record and whether the lease on it has lapsed, by the database's clock (null: no intern). */
export async function withLease(db: Db, id: string): Promise<(InternRow & { leaseLapsed: boolean }) | null> {
  const [r] = await db
    .select({ row: interns, lapsed: sql<boolean>`coalesce(${interns.leaseUntil} < now(), false)` })
    .from(interns)
    .where(eq(interns.id, id));
  return r ? { ...r.row, leaseLapsed: r.lapsed === true || (r.lapsed as unknown) === 't' } : null;
}

/** Held interns (every account) whose lease has lapsed. */
export async function lapsedWork(db: Db, o: { ms: number }): Promise<InternRow[]> {
  return db
    .select()
    .from(interns)
    .where(and(inArray(interns.status, HELD_STATUSES), lapsed(o.ms)));
}

/** Takes a lapsed lease over: null if another gateway did first, or its owner renewed it meanwhile. */
export async function claimLapsed(
  db: Db,
  row: InternRow,
  o: { owner: string; ms: number; progress?: InternRow['progress'] },
): Promise<InternRow | null> {
  forgetRunning(db, row.id);
  const [claimed] = await db
    .update(interns)
    .set({
      leaseOwner: o.owner,
      leaseUntil: leaseEnd(o.ms),
      ...(o.progress === undefined ? {} : { progress: o.progress }),
      updatedAt: new Date(),
    })
    .where(
      and(
        eq(interns.id, row.id),
        eq(interns.status, row.status),
        row.leaseOwner === null ? isNull(interns.leaseOwner) : eq(interns.leaseOwner, row.leaseOwner),
        lapsed(o.ms),
      ),
    )
    .returning();
  return claimed ?? null;
}

export type LeaseKeeper = {
  readonly owner: string;
  readonly ms: number;
  /** Whether this gateway may take over others' lapsed leases now (see the header). */
  judging(): boolean;
  close(): void;
};

/**
 * Renews this gateway's leases and, each time, hands `onLapsed` the held interns whose lease
 * has lapsed (only while it may judge). Errors are reported, never thrown: a database that fails
 * a renewal makes the gateway stop judging until it has renewed for a whole lease again.
 */
export function keepLeases(o: {
  db: Db;
  owner: string;
  ms: number;
  onLapsed: (rows: InternRow[]) => Promise<void>;
  onError: (err: unknown) => void;
  now?: () => number;
}): LeaseKeeper {
  const now = o.now ?? Date.now;
  let healthySince: number | null = null;
  let closed = false;
  let running: Promise<void> | null = null;
  const judging = () => mayJudge({ healthySince, now: now(), leaseMs: o.ms });
  async function round() {
    try {
      const at = now();
      await renewLeases(o.db, { owner: o.owner, ms: o.ms });
      healthySince ??= at;
    } catch (err) {
      healthySince = null;
      return o.onError(err);
    }
    if (!judging() || closed) return;
    try {
      const rows = await lapsedWork(o.db, { ms: o.ms });
      if (rows.length) await o.onLapsed(rows);
    } catch (err) {
      o.onError(err);
    }
  }
  const tick = () => {
    if (running || closed) return;
    running = round().finally(() => (running = null));
  };
  const timer = setInterval(tick, Math.max(50, Math.floor(o.ms / 3)));
  timer.unref();
  tick();
  return {
    owner: o.owner,
    ms: o.ms,
    judging,
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
