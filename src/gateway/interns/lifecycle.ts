// Intern lifecycle: provision (start the daemon through the provisioner, with progress steps),
// suspend, delete, and re-adoption of daemons by a starting gateway. Transitions are guarded
// by the status they start from, so gateways sharing a database do not undo each other's work.
// A provision or a delete runs in the background of the gateway that accepted it, under a lease
// on the intern's record that the gateway renews; when the gateway dies, another takes the work
// over within seconds (leases.ts, docs/failure-modes.md).
import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import { scrub } from '../../shared/log.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { revokeKey } from '../access/identity-store.ts';
import type { DaemonSpec, Provisioner } from './provisioner/index.ts';
import { internDeleting } from '../errors.ts';
import type { Catalogue } from './agent-catalogue.ts';
import {
  DEFAULT_INTERN_MODEL,
  deleteInternRow,
  getInternById,
  internsWithDaemons,
  openSecrets,
  setInternState,
  workspaceModel,
} from './interns.ts';
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

/** Thrown from a provision step when the intern is no longer provisioning (deleted or suspended). */
class Superseded extends Error {
  constructor() {
    super('the intern was deleted or suspended while it started');
  }
}

const message = (err: unknown) => scrub(err instanceof Error ? err.message : String(err)).slice(0, 1000);

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
  const tasks = new Set<Promise<void>>();
  const probing = new Set<string>();
  /** Provisions this process is running, by intern: a delete waits for its intern's to stop. */
  const provisioning = new Map<string, Promise<void>>();
  /** Deletes this process is running. */
  const deleting = new Set<string>();
  const wakes = new Map<string, Promise<unknown>>();
  const wakeOf = (id: string) => wakes.get(id)?.catch(() => {});
  const background = (name: string, id: string, fn: () => Promise<void>) => {
    const t = fn()
      .catch((err) => log.error({ err, intern: id }, `${name} failed`))
      .finally(() => tasks.delete(t));
    tasks.add(t);
    return t;
  };

  async function modelFor(row: InternRow): Promise<string> {
    if (row.model) return row.model;
    return (await workspaceModel(db, row.workspaceId)) ?? DEFAULT_INTERN_MODEL;
  }

  /** A provision whose intern was deleted or suspended meanwhile: what it started must not linger,
   * and for a deleted intern neither may what it made (its directory, made again after the delete
   * removed it). Taken over by another gateway (this one's lease lapsed), it stops only its own
   * daemon: what runs besides is the other gateway's start. */
  async function abandon(id: string, pid: number | null) {
    const now = await getInternById(db, id);
    if (now?.status === 'provisioning' && now.leaseOwner !== lease.owner) {
      if (pid) await provisioner.stop({ id, pid, alone: true });
    } else if (!now || now.status === 'destroying' || now.status === 'destroy_failed')
      await provisioner.destroy({ id, pid });
    else await provisioner.stop({ id, pid });
  }

  async function daemonSpec(row: InternRow): Promise<DaemonSpec> {
    const { secret, apiKey } = openSecrets(opts.sealer, row);
    const agent = opts.agents.get(row.agent);
    if (!agent) {
      const missing = opts.agents.missing.find((m) => m.id === row.agent);
      const why = missing
        ? `is not installed on this installation (its operator adds it with \`${missing.install}\`)`
        : `is not in this installation's catalogue (it offers ${opts.agents.ids().join(', ')})`;
      throw new Error(`the intern's agent "${row.agent}" ${why}; choose another with PATCH /interns/{id}`);
    }
    return {
      internId: row.id,
      secret,
      apiKey,
      model: await modelFor(row),
      instructions: row.instructions ?? '',
      gatewayUrl,
      agent: { command: agent.command, env: agent.env, modes: agent.modes, userNamespaces: agent.user_namespaces },
    };
  }

  async function runProvision(row: InternRow) {
    try {
      // A wake here that lost its claim to this provision stops what it started first.
      await wakeOf(row.id);
      await provisioner.stop({ id: row.id, pid: (await getInternById(db, row.id))?.daemonPid ?? row.daemonPid });
      // Each step re-checks the claim, so a delete or suspend stops the start at the next step
      // (the provisioner stops a daemon it already spawned) instead of after it is up.
      const spec = await daemonSpec(row);
      const handle = await provisioner.start(spec, async (s) => {
        const still = await setInternState(db, {
          id: row.id,
          from: ['provisioning'],
          leaseOwner: lease.owner,
          patch: { progress: { step_label: s.label, step_number: s.number, total_steps: s.total } },
        });
        if (!still) throw new Superseded();
      });
      const done = await setInternState(db, {
        id: row.id,
        from: ['provisioning'],
        leaseOwner: lease.owner,
        lease: null,
        patch: {
          status: 'running',
          progress: null,
          hostname: handle.hostname,
          daemonPid: handle.pid,
          lastFailureMessage: null,
          power: 'awake',
          powerAt: null,
        },
      });
      if (!done) await abandon(row.id, handle.pid);
    } catch (err) {
      const failed = await setInternState(db, {
        id: row.id,
        from: ['provisioning'],
        leaseOwner: lease.owner,
        lease: null,
        patch: { status: 'failed', progress: null, hostname: null, daemonPid: null, lastFailureMessage: message(err) },
      });
      if (!failed) await abandon(row.id, null);
    }
  }

  /** Runs a provision in the background of this process. */
  function startProvision(row: InternRow) {
    const t = background('provision', row.id, () => runProvision(row));
    provisioning.set(row.id, t);
    void t.finally(() => provisioning.get(row.id) === t && provisioning.delete(row.id));
  }

  function startDestroy(row: InternRow) {
    deleting.add(row.id);
    void background('delete', row.id, () => runDestroy(row)).finally(() => deleting.delete(row.id));
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

  async function runDestroy(row: InternRow) {
    try {
      // A provision of this intern here first sees its claim lost and stops what it started; the
      // directory is removed after that, not under a daemon still starting in it.
      await provisioning.get(row.id);
      await wakeOf(row.id);
      await provisioner.destroy({ id: row.id, pid: (await getInternById(db, row.id))?.daemonPid ?? row.daemonPid });
      if (row.apiKeyId) await revokeKey(db, row.apiKeyId);
      await deleteInternRow(db, row.id);
    } catch (err) {
      await setInternState(db, {
        id: row.id,
        lease: null,
        patch: { status: 'destroy_failed', progress: null, lastFailureMessage: message(err) },
      });
    }
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
        // Asleep, it has no daemon to check; half-way to or from sleep, the next chat takes it over once stale.
        if (row.status === 'running' && row.power !== 'awake') continue;
        if (row.status === 'running' && !row.hostname) {
          // Restored from a backup: it starts again on its files.
          const claimed = await setInternState(db, {
            id: row.id,
            from: ['running'],
            lease,
            patch: { status: 'provisioning', progress: QUEUED },
          });
          if (claimed) startProvision(claimed);
        } else if (row.status === 'running') {
          if (row.hostname && (await provisioner.healthy(row.hostname))) continue;
          log.warn({ intern: row.id }, 'intern daemon not reachable at gateway start; marked failed');
          await setInternState(db, {
            id: row.id,
            from: ['running'],
            patch: {
              status: 'failed',
              hostname: null,
              lastFailureMessage: 'the daemon was not running when the gateway started; provision the intern again',
            },
          });
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
      background('health check', id, async () => {
        try {
          const before = await getInternById(db, id);
          // Gone to sleep meanwhile: refused because it sleeps, not because it died.
          if (
            before?.status !== 'running' ||
            before.power !== 'awake' ||
            before.hostname !== hostname ||
            (await provisioner.healthy(hostname))
          )
            return;
          // Guarded by the address too: a provision meanwhile has started a new daemon elsewhere.
          const marked = await setInternState(db, {
            id,
            from: ['running'],
            hostname,
            patch: {
              status: 'failed',
              hostname: null,
              daemonPid: null,
              lastFailureMessage: 'the daemon stopped answering (connection refused); provision the intern again',
            },
          });
          if (!marked) return;
          log.warn({ intern: id }, 'intern daemon refused connections and failed its health check; marked failed');
          // Whatever is left of it (an agent outliving its daemon) goes too.
          await provisioner.stop({ id, pid: before.daemonPid });
        } finally {
          probing.delete(id);
        }
      });
    },
    setGatewayUrl(url) {
      gatewayUrl = url;
    },
    daemonSpec,
    trackWake(id, wake) {
      wakes.set(id, wake);
      void wake.catch(() => {}).finally(() => wakes.get(id) === wake && wakes.delete(id));
    },
    async idle() {
      while (tasks.size) await Promise.all([...tasks]);
    },
    close() {
      keeper?.close();
    },
    judging: () => keeper?.judging() ?? false,
  };
}
