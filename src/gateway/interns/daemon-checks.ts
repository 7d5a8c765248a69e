// Whether an intern's daemon still runs where its record says: checked for every running intern
// when a gateway starts (readoptRow), and for one whose address refused a chat (failIfGone). A
// daemon that does not answer its health check marks its intern `failed`, guarded by the status
// and address it was read with, so a provision meanwhile is not undone.
import type { Db } from '../store/db.ts';
import type { Logger } from '../../shared/log.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { Provisioner } from './provisioner/index.ts';
import { getInternById, setInternState } from './interns.ts';

type Deps = { db: Db; provisioner: Provisioner; log: Logger };

/** At gateway start, for an intern with a daemon on record: 'restart' when a running intern has no
 * address (restored from a backup: it starts again on its files); else it is kept, or marked
 * failed when its daemon is gone. Asleep or half-way to or from sleep, there is nothing to check
 * (the next chat takes it over once stale); provisioning and deleting ones are held work (leases.ts). */
export async function readoptRow({ db, provisioner, log }: Deps, row: InternRow): Promise<'restart' | 'kept'> {
  if (row.status !== 'running' || row.power !== 'awake') return 'kept';
  if (!row.hostname) return 'restart';
  if (await provisioner.healthy(row.hostname)) return 'kept';
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
  return 'kept';
}

/** A chat found nothing listening at the intern's address: if its health check fails too, the
 * daemon is gone, so the intern is marked `failed` and whatever is left of it is stopped. */
export async function failIfGone({ db, provisioner, log }: Deps, { id, hostname }: { id: string; hostname: string }) {
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
}
