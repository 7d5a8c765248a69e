// Intern lifecycle: provision (start the daemon through the provisioner, with progress steps),
// suspend, delete, and re-adoption of daemons by a starting gateway. Transitions are guarded
// by the status they start from, so gateways sharing a database do not undo each other's work.
// A provision or a delete runs in the background of the gateway that accepted it, under a lease
// on the intern's record that the gateway renews; when the gateway dies, another takes the work
// over within seconds (leases.ts, docs/failure-modes.md).
// This module claims the transitions and runs the short ones; lifecycle-runs.ts runs a provision and
// a delete; daemon-spec.ts, daemon-checks.ts and lifecycle-work.ts hold what they use.
import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { DaemonSpec, Provisioner } from './provisioner/index.ts';
import { internDeleting } from '../errors.ts';
import type { Catalogue } from './agent-catalogue.ts';
import { daemonSpecOf } from './daemon-spec.ts';
import { failIfGone, readoptRow } from './daemon-checks.ts';
import { createBackgroundWork } from './lifecycle-work.ts';
import { getInternById, internsWithDaemons, setInternState } from './interns.ts';
import { message, runDestroy, runProvision, type RunContext } from './lifecycle-runs.ts';
import { claimLapsed, keepLeases, takeoverOf, type LeaseKeeper } from './leases.ts';
const QUEUED = { step_label: 'queued', step_number: 1, total_steps: 3 };

export type InternLifecycle = {
  provision(row: InternRow): Promise<void>;
  suspend(row: InternRow): Promise<void>;
  destroy(row: InternRow): Promise<void>;
  /** On gateway start: keep healthy daemons, mark the others; from then on, keep this gateway's
   * leases and take over work whose gateway died. */
  readopt(): Promise<void>;
  /** A chat found nothing listening at the intern's address: if its health check fails too, the
   * daemon is gone, so the intern is marked `failed` (GET shows why) instead of staying `running`. */
  noticeRefused(intern: { id: string; hostname: string }): void;
  setGatewayUrl(url: string): void;
  /** What starting the intern's daemon takes (its secrets, model and agent), for a wake. */
  daemonSpec(row: InternRow): Promise<DaemonSpec>;
  /** A wake under way in this process: a provision or delete of the intern waits for it, so its
   * daemon is never started twice on one disk, nor removed while it starts. */
  trackWake(id: string, wake: Promise<unknown>): void;
  /** Resolves when background work started by this process has finished. */
  idle(): Promise<void>;
  /** Stops renewing leases and taking work over (at shutdown; work under way still finishes). */
  close(): void;
  /** Whether this gateway may take over others' lapsed leases now (leases.ts). */
  judging(): boolean;
};

export function createInternLifecycle(opts: {
  db: Db;
  sealer: Sealer;
  provisioner: Provisioner;
  log: Logger;
  agents: Catalogue;
  gatewayUrl?: string;
  /** This gateway's name on the leases it holds, and their length (COHORT_GATEWAY_LEASE_MS). */
  lease?: { owner: string; ms: number };
}): InternLifecycle {
  const { db, provisioner, log } = opts;
  const lease = opts.lease ?? { owner: randomUUID(), ms: 6_000 };
  let keeper: LeaseKeeper | null = null;
  let gatewayUrl = opts.gatewayUrl ?? '';
  const work = createBackgroundWork(log);
  const { background, provisioning, deleting, wakeOf } = work;
  const probing = new Set<string>();
  const runs = (): RunContext => ({ db, provisioner, owner: lease.owner, wakeOf, provisioning, daemonSpec });

  const daemonSpec = (row: InternRow) =>
    daemonSpecOf({ db, sealer: opts.sealer, agents: opts.agents, gatewayUrl }, row);

  /** Runs a provision in the background of this process. */
  function startProvision(row: InternRow) {
    const t = background('provision', row.id, () => runProvision(runs(), row));
    provisioning.set(row.id, t);
    void t.finally(() => provisioning.get(row.id) === t && provisioning.delete(row.id));
  }

  function startDestroy(row: InternRow) {
    deleting.add(row.id);
    void background('delete', row.id, () => runDestroy(runs(), row)).finally(() => deleting.delete(row.id));
  }

  /** Takes over held work whose gateway died (its lease lapsed), once: a provision starts again
   * from the beginning, stopping what the dead gateway started; a delete runs again. */
  async function takeOver(row: InternRow): Promise<boolean> {
    const work = takeoverOf({
      status: row.status,
      runningHere: provisioning.has(row.id) || deleting.has(row.id),
      judging: keeper?.judging() ?? false,
    });
    if (!work) return false;
    const claimed = await claimLapsed(db, row, {
      owner: lease.owner,
      ms: lease.ms,
      progress: work === 'provision' ? QUEUED : undefined,
    });
    if (!claimed) return false;
    log.warn(
      { intern: row.id, from: row.leaseOwner },
      work === 'provision'
        ? 'took over the provisioning of an intern whose gateway stopped'
        : 'took over the deletion of an intern whose gateway stopped',
    );
    if (work === 'provision') startProvision(claimed);
    else startDestroy(claimed);
    return true;
  }

  return {
    async provision(row) {
      if (row.status === 'destroying' || row.status === 'destroy_failed') throw internDeleting();
      // Under way in a live gateway: nothing to do. Its gateway died: this one starts it now.
      if (row.status === 'provisioning') return void (await takeOver(row));
      const claimed = await setInternState(db, {
        id: row.id,
        from: [row.status],
        lease,
        patch: { status: 'provisioning', progress: QUEUED, lastFailureMessage: null },
      });
      if (claimed) startProvision(claimed);
    },
    async suspend(row) {
      if (row.status === 'destroying' || row.status === 'destroy_failed') throw internDeleting();
      await setInternState(db, { id: row.id, patch: { status: 'stopped', progress: null } });
      await provisioner.stop({ id: row.id, pid: row.daemonPid });
      // A wake under way here sees its claim lost and stops what it started.
      await wakeOf(row.id);
      await setInternState(db, {
        id: row.id,
        from: ['stopped'],
        patch: { hostname: null, daemonPid: null, power: 'awake', powerAt: null },
      });
    },
    async destroy(row) {
      // Claimed from the status last read; if that changed meanwhile (a provision finished), from the new one.
      for (let r: InternRow | null = row, tries = 0; r && r.status !== 'destroying' && tries < 5; tries++) {
        const claimed = await setInternState(db, {
          id: r.id,
          from: [r.status],
          lease,
          patch: { status: 'destroying', progress: null },
        });
        if (claimed) return startDestroy(claimed);
        r = await getInternById(db, r.id);
      }
    },
    async readopt() {
      for (const row of await internsWithDaemons(db)) {
        if ((await readoptRow({ db, provisioner, log }, row)) === 'restart') {
          const claimed = await setInternState(db, {
            id: row.id,
            from: ['running'],
            lease,
            patch: { status: 'provisioning', progress: QUEUED },
          });
          if (claimed) startProvision(claimed);
        }
        // Provisioning and deleting interns are held work: the lease keeper below takes over those
        // whose gateway died, once this gateway has renewed its own leases for a whole lease.
      }
      keeper ??= keepLeases({
        db,
        owner: lease.owner,
        ms: lease.ms,
        onLapsed: async (rows) => {
          for (const r of rows) await takeOver(r);
        },
        onError: (err) => log.warn({ reason: message(err) }, 'could not renew intern leases; will try again'),
      });
    },
    noticeRefused({ id, hostname }) {
      if (probing.has(id)) return;
      probing.add(id);
      background('health check', id, () =>
        failIfGone({ db, provisioner, log }, { id, hostname }).finally(() => probing.delete(id)),
      );
    },
    setGatewayUrl(url) {
      gatewayUrl = url;
    },
    daemonSpec,
    trackWake: work.trackWake,
    idle: work.idle,
    close() {
      keeper?.close();
    },
    judging: () => keeper?.judging() ?? false,
  };
}
