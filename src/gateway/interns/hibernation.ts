// Hibernation (docs/fleet.md): a running intern idle for COHORT_INTERN_IDLE_MS has its daemon (and
// agent) stopped, its files kept; its status stays `running` and the next chat wakes it, through
// the wake queue. Every move is a compare-and-set on the intern's record (power.ts says which), so
// gateways sharing a database never both put one intern to sleep or both start its daemon; a
// gateway that dies half-way leaves a transition that the next chat takes over once that
// gateway's lease on it has lapsed (leases.ts: seconds), or at the latest once it is stale.
// Run state stays in the daemon (docs/internals/architecture.md#principles, 1): only the daemon can
// say it is idle, and once it agreed to sleep it refuses new work, which the chat route retries on
// the woken daemon.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { Provisioner } from './provisioner/index.ts';
import type { InternLifecycle } from './lifecycle.ts';
import { awakeInterns, getInternById, internNotFound } from './interns.ts';
import { daemonTarget, notReady } from './chat.ts';
import type { DaemonTarget } from './daemon-client.ts';
import { wakeQueueFull } from '../errors.ts';
import { putToSleep, wakeDaemon } from './power-moves.ts';
import { createSharedWakes } from './shared-wakes.ts';
import { chatPlan } from './power.ts';
import { withLease } from './leases.ts';
import { createWakeQueue, WakeRefused, type WakeLimits } from './wake-queue.ts';

export type FleetOptions = {
  db: Db;
  sealer: Sealer;
  provisioner: Provisioner;
  lifecycle: InternLifecycle;
  log: Logger;
  /** Idle time after which an intern sleeps; 0: interns never sleep. */
  idleMs: number;
  queue: WakeLimits;
  /** A transition older than this was left by a gateway that died: the next chat takes it over. */
  staleMs?: number;
  /** This gateway's name on the leases of the moves it makes, and their length; sooner than
   * `staleMs`, a move whose lease lapsed (its gateway died) is taken over by the next chat. */
  lease?: { owner: string; ms: number };
  /** Whether this gateway may judge others' leases now (leases.ts). */
  judging?: () => boolean;
  onWake?: (seconds: number) => void;
  onSleep?: () => void;
  onWakeRefused?: () => void;
};

export type Fleet = {
  /** The daemon a chat goes to: a sleeping intern is woken first (the caller's account waits its
   * turn in the wake queue); `503 busy` with Retry-After when the queue is full. */
  target(row: InternRow, account: string, signal: AbortSignal): Promise<DaemonTarget>;
  /** After the daemon at `failed` refused a chat as going to sleep or stopping (or nothing listened
   * there): the daemon to retry on, once the record has moved on from it; null when it has not
   * (the daemon died, or is stopping for good), so the refusal stands. */
  retarget(
    id: string,
    failed: DaemonTarget,
    how: 'refused' | 'not_ready',
    account: string,
    signal: AbortSignal,
  ): Promise<DaemonTarget | null>;
  /** Puts to sleep the awake interns whose daemons agree they were idle long enough. */
  sweep(): Promise<void>;
  stats(): { running: number; queued: number };
  close(): Promise<void>;
};

/** A transition is taken over after the longest a daemon start may take (20 s) and its health check, with room. */
const STALE_MS = 60_000;
/** Record reads while another gateway moves the intern. */
const POLL_MS = 50;
/** Daemons asked to sleep at once by one sweep. */
const SWEEP_CONCURRENCY = 4;

export function createFleet(o: FleetOptions): Fleet {
  const { db, log } = o;
  const staleMs = o.staleMs ?? STALE_MS;
  const queue = createWakeQueue(o.queue);
  const sweeping = new Set<Promise<void>>();
  let closed = false;

  /** Reads the intern until its daemon is up (starting it when it is this caller's to start). */
  async function wake(id: string, account: string, signal: AbortSignal): Promise<InternRow> {
    for (;;) {
      signal.throwIfAborted();
      const read = await withLease(db, id);
      if (!read) throw internNotFound();
      const { leaseLapsed, ...row } = read;
      // A lapsed lease is another gateway's only once this one may judge (after an outage, not at once).
      const plan = chatPlan({ ...row, leaseLapsed: leaseLapsed && (o.judging?.() ?? false) }, Date.now(), staleMs);
      if (plan === 'relay') return row;
      if (plan === 'not_ready') throw notReady(row.status, row.id);
      if (plan === 'wait') {
        await sleep(POLL_MS);
        continue;
      }
      const woken = await queue.run(account, () => wakeDaemon(o, row), signal);
      if (woken) return woken;
    }
  }

  /** One wake per intern in this process, whoever asks (the first asker's account waits its turn). */
  const wakes = createSharedWakes<InternRow>({ onStart: (id, done) => o.lifecycle.trackWake(id, done) });
  const shared = (id: string, account: string, signal: AbortSignal) =>
    wakes(id, signal, (abort) => wake(id, account, abort));

  async function sweep(): Promise<void> {
    if (!o.idleMs || closed) return;
    const rows = await awakeInterns(db);
    for (let i = 0; i < rows.length && !closed; i += SWEEP_CONCURRENCY) {
      await Promise.all(
        rows
          .slice(i, i + SWEEP_CONCURRENCY)
          .map((r) =>
            putToSleep(o, r).catch((err: unknown) =>
              log.error({ err, intern: r.id }, 'putting an intern to sleep failed'),
            ),
          ),
      );
    }
  }

  // Each sweep after the last one finished, a quarter of the idle time apart (at most 10 s), so an
  // intern sleeps between one and one and a quarter idle times after its last run.
  const every = Math.min(10_000, Math.max(200, Math.floor(o.idleMs / 4)));
  let timer: NodeJS.Timeout | null = null;
  const schedule = () => {
    if (closed || !o.idleMs) return;
    timer = setTimeout(() => {
      const s = sweep()
        .catch((err: unknown) => log.error({ err }, 'hibernation sweep failed'))
        .finally(() => {
          sweeping.delete(s);
          schedule();
        });
      sweeping.add(s);
    }, every);
    timer.unref();
  };
  schedule();

  return {
    async target(row, account, signal) {
      if (chatPlan(row, Date.now(), staleMs) === 'relay') return daemonTarget(o.sealer, row);
      try {
        return daemonTarget(o.sealer, await shared(row.id, account, signal));
      } catch (err) {
        if (err instanceof WakeRefused) {
          o.onWakeRefused?.();
          throw wakeQueueFull(err.message, err.retryAfterS);
        }
        throw err;
      }
    },
    async retarget(id, failed, how, account, signal) {
      // A daemon that agreed to sleep is recorded so a moment later; one that refused the
      // connection outright has either been recorded asleep already or died.
      const polls = how === 'not_ready' ? Math.ceil(5_000 / POLL_MS) : 1;
      for (let i = 0; i < polls; i++) {
        const row = await getInternById(db, id);
        if (!row) throw internNotFound();
        if (row.power !== 'awake' || row.hostname !== failed.baseUrl || row.status !== 'running')
          return this.target(row, account, signal);
        if (i + 1 < polls) await sleep(POLL_MS);
        signal.throwIfAborted();
      }
      return null;
    },
    sweep,
    stats: () => queue.stats(),
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await Promise.all([...sweeping]);
    },
  };
}
