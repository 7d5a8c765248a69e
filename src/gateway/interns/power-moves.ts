// The two moves of an intern's daemon under hibernation (hibernation.ts schedules them): waking a
// sleeping intern (or taking over a stale transition) and putting an idle one to sleep. Each is a
// compare-and-set on the intern's record (power.ts), so of two gateways only one makes a move, and
// a move that lost its intern meanwhile stops only what it started itself.
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import { scrub } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { Provisioner } from './provisioner/index.ts';
import type { InternLifecycle } from './lifecycle.ts';
import { setInternState } from './interns.ts';
import { daemonTarget } from './chat.ts';
import { askToHibernate } from './daemon-client.ts';
import { internWakeFailed } from '../errors.ts';

export type PowerDeps = {
  db: Db;
  sealer: Sealer;
  provisioner: Provisioner;
  lifecycle: InternLifecycle;
  log: Logger;
  /** This gateway's lease on the moves it makes (leases.ts). */
  lease?: { owner: string; ms: number };
  idleMs: number;
  onWake?: (seconds: number) => void;
  onSleep?: () => void;
};

const wakeFailed = (err: unknown) =>
  internWakeFailed(scrub(err instanceof Error ? err.message : String(err)).slice(0, 300));

/** Claims the wake of a sleeping intern (or a stale transition) and starts its daemon. Null: the
 * claim went to someone else, or the record changed under the start; read it again. */
export async function wakeDaemon(o: PowerDeps, row: InternRow): Promise<InternRow | null> {
  const { db, provisioner, log } = o;
  const claimed = await setInternState(db, {
    id: row.id,
    from: ['running'],
    power: [row.power],
    powerAt: row.powerAt,
    lease: o.lease,
    patch: { power: 'waking', powerAt: new Date() },
  });
  if (!claimed) return null;
  const t0 = performance.now();
  // Taken over from a gateway that died while putting it to sleep: its daemon may still run.
  await provisioner.stop({ id: row.id, pid: row.daemonPid });
  let started: { hostname: string; pid: number | null };
  try {
    started = await provisioner.start(await o.lifecycle.daemonSpec(claimed), async () => {});
  } catch (err) {
    const message = scrub(err instanceof Error ? err.message : String(err)).slice(0, 1000);
    // As a failed provision: the intern shows why, and provisioning starts it again.
    await setInternState(db, {
      id: row.id,
      from: ['running'],
      power: ['waking'],
      powerAt: claimed.powerAt,
      lease: null,
      patch: {
        status: 'failed',
        power: 'awake',
        powerAt: null,
        hostname: null,
        daemonPid: null,
        lastFailureMessage: message,
      },
    });
    log.warn({ intern: row.id, reason: message }, 'intern could not be woken; marked failed');
    throw wakeFailed(err);
  }
  const awake = await setInternState(db, {
    id: row.id,
    from: ['running'],
    power: ['waking'],
    powerAt: claimed.powerAt,
    lease: null,
    patch: { power: 'awake', powerAt: new Date(), hostname: started.hostname, daemonPid: started.pid },
  });
  if (!awake) {
    // Suspended, deleted or provisioned meanwhile, or taken over: what this wake started, and
    // only that, must not linger.
    await provisioner.stop({ id: row.id, pid: started.pid, alone: true });
    return null;
  }
  o.onWake?.((performance.now() - t0) / 1000);
  return awake;
}

/** Asks an awake intern's daemon whether it was idle for the idle time; if it agrees, records the
 * sleep, stops the daemon (its files stay) and records it asleep. */
export async function putToSleep(o: PowerDeps, row: InternRow): Promise<void> {
  const { db, provisioner } = o;
  const target = daemonTarget(o.sealer, row);
  if (!(await askToHibernate(target, o.idleMs))) return;
  // The daemon agreed and refuses new work from now on; the record says so before it stops.
  const claimed = await setInternState(db, {
    id: row.id,
    from: ['running'],
    power: ['awake'],
    hostname: row.hostname!,
    lease: o.lease,
    patch: { power: 'sleeping', powerAt: new Date() },
  });
  if (!claimed) return; // another gateway's sweep, or a provision, suspend or delete, has it
  await provisioner.stop({ id: row.id, pid: claimed.daemonPid });
  const asleep = await setInternState(db, {
    id: row.id,
    from: ['running'],
    power: ['sleeping'],
    powerAt: claimed.powerAt,
    lease: null,
    patch: { power: 'asleep', powerAt: new Date(), hostname: null, daemonPid: null },
  });
  if (asleep) {
    o.onSleep?.();
    o.log.info({ intern: row.id }, 'intern idle: asleep');
  }
}
