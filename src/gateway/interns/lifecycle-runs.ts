// The two long transitions of an intern's lifecycle, as they run in the background of the gateway
// that holds the intern's lease: a provision (start the daemon, step by step, each step re-checking
// the claim) and a delete. lifecycle.ts claims the work and starts these; leases.ts keeps the claim.
import type { Db } from '../store/db.ts';
import { scrub } from '../../shared/log.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { revokeKey } from '../access/identity-store.ts';
import type { DaemonSpec, Provisioner } from './provisioner/index.ts';
import { deleteInternRow, getInternById, setInternState } from './interns.ts';

/** What a run needs from the lifecycle that started it. */
export type RunContext = {
  db: Db;
  provisioner: Provisioner;
  /** This gateway's name on the leases it holds. */
  owner: string;
  /** Settles when the intern's wake under way in this process (if any) has. */
  wakeOf(id: string): Promise<unknown> | undefined;
  /** Provisions running in this process, by intern: a delete waits for its intern's. */
  provisioning: Map<string, Promise<void>>;
  daemonSpec(row: InternRow): Promise<DaemonSpec>;
};

/** Thrown from a provision step when the intern is no longer provisioning (deleted or suspended). */
class Superseded extends Error {
  constructor() {
    super('the intern was deleted or suspended while it started');
  }
}

/** An error as the intern's `last_failure_message`: scrubbed of secrets, bounded. */
export const message = (err: unknown) => scrub(err instanceof Error ? err.message : String(err)).slice(0, 1000);

/** A provision whose intern was deleted or suspended meanwhile: what it started must not linger,
 * and for a deleted intern neither may what it made (its directory, made again after the delete
 * removed it). Taken over by another gateway (this one's lease lapsed), it stops only its own
 * daemon: what runs besides is the other gateway's start. */
async function abandon(ctx: RunContext, id: string, pid: number | null) {
  const { db, provisioner } = ctx;
  const now = await getInternById(db, id);
  if (now?.status === 'provisioning' && now.leaseOwner !== ctx.owner) {
    if (pid) await provisioner.stop({ id, pid, alone: true });
  } else if (!now || now.status === 'destroying' || now.status === 'destroy_failed')
    await provisioner.destroy({ id, pid });
  else await provisioner.stop({ id, pid });
}

export async function runProvision(ctx: RunContext, row: InternRow) {
  const { db, provisioner, owner } = ctx;
  try {
    // A wake here that lost its claim to this provision stops what it started first.
    await ctx.wakeOf(row.id);
    await provisioner.stop({ id: row.id, pid: (await getInternById(db, row.id))?.daemonPid ?? row.daemonPid });
    // Each step re-checks the claim, so a delete or suspend stops the start at the next step
    // (the provisioner stops a daemon it already spawned) instead of after it is up.
    const spec = await ctx.daemonSpec(row);
    const handle = await provisioner.start(spec, async (s) => {
      const still = await setInternState(db, {
        id: row.id,
        from: ['provisioning'],
        leaseOwner: owner,
        patch: { progress: { step_label: s.label, step_number: s.number, total_steps: s.total } },
      });
      if (!still) throw new Superseded();
    });
    const done = await setInternState(db, {
      id: row.id,
      from: ['provisioning'],
      leaseOwner: owner,
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
    if (!done) await abandon(ctx, row.id, handle.pid);
  } catch (err) {
    const failed = await setInternState(db, {
      id: row.id,
      from: ['provisioning'],
      leaseOwner: owner,
      lease: null,
      patch: { status: 'failed', progress: null, hostname: null, daemonPid: null, lastFailureMessage: message(err) },
    });
    if (!failed) await abandon(ctx, row.id, null);
  }
}

export async function runDestroy(ctx: RunContext, row: InternRow) {
  const { db, provisioner } = ctx;
  try {
    // A provision of this intern here first sees its claim lost and stops what it started; the
    // directory is removed after that, not under a daemon still starting in it.
    await ctx.provisioning.get(row.id);
    await ctx.wakeOf(row.id);
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
