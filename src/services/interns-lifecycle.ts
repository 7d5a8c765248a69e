// Intern lifecycle: provision (start the daemon through the provisioner, with progress steps),
// suspend, delete, and re-adoption of daemons by a starting gateway. Transitions are guarded
// by the status they start from, so gateways sharing a database do not undo each other's work.
import { eq } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Logger } from '../log.ts';
import { scrub } from '../log.ts';
import type { Sealer } from '../crypto/seal.ts';
import { workspaces } from '../store/schema.ts';
import type { InternRow } from '../store/schema-interns.ts';
import { revokeKey } from '../store/identity.ts';
import type { Provisioner } from '../provisioner/index.ts';
import { ApiError } from '../errors.ts';
import type { Catalogue } from '../agents/catalogue.ts';
import { deleteInternRow, getInternById, internsWithDaemons, openSecrets, setInternState } from './interns.ts';

export const DEFAULT_INTERN_MODEL = 'local/scripted';
const STALE_MS = 120_000;

export type InternLifecycle = {
  provision(row: InternRow): Promise<void>;
  suspend(row: InternRow): Promise<void>;
  destroy(row: InternRow): Promise<void>;
  /** On gateway start: keep healthy daemons, mark the others. */
  readopt(): Promise<void>;
  /** A chat found nothing listening at the intern's address: if its health check fails too, the
   * daemon is gone, so the intern is marked `failed` (GET shows why) instead of staying `running`. */
  noticeRefused(intern: { id: string; hostname: string }): void;
  setGatewayUrl(url: string): void;
  /** Resolves when background work started by this process has finished. */
  idle(): Promise<void>;
};

const deleting = () => new ApiError({ status: 409, message: 'the intern is being deleted' });
const message = (err: unknown) => scrub(err instanceof Error ? err.message : String(err)).slice(0, 1000);

export function createInternLifecycle(opts: { db: Db; sealer: Sealer; provisioner: Provisioner; log: Logger; agents: Catalogue; gatewayUrl?: string }): InternLifecycle {
  const { db, provisioner, log } = opts;
  let gatewayUrl = opts.gatewayUrl ?? '';
  const tasks = new Set<Promise<void>>();
  const probing = new Set<string>();
  const background = (name: string, id: string, fn: () => Promise<void>) => {
    const t = fn()
      .catch((err) => log.error({ err, intern: id }, `${name} failed`))
      .finally(() => tasks.delete(t));
    tasks.add(t);
  };

  async function modelFor(row: InternRow): Promise<string> {
    if (row.model) return row.model;
    const [ws] = await db.select({ m: workspaces.defaultTextModel }).from(workspaces).where(eq(workspaces.id, row.workspaceId));
    return ws?.m ?? DEFAULT_INTERN_MODEL;
  }

  async function runProvision(row: InternRow) {
    try {
      await provisioner.stop({ id: row.id, pid: row.daemonPid });
      const { secret, apiKey } = openSecrets(opts.sealer, row);
      const agent = opts.agents.get(row.agent);
      if (!agent) throw new Error(`the intern's agent "${row.agent}" is not in this installation's catalogue (it offers ${opts.agents.ids().join(', ')}); choose another with PATCH /interns/{id}`);
      const handle = await provisioner.start(
        { internId: row.id, secret, apiKey, model: await modelFor(row), instructions: row.instructions ?? '', gatewayUrl, agent: { command: agent.command, env: agent.env, modes: agent.modes } },
        async (s) => void (await setInternState(db, { id: row.id, from: ['provisioning'], patch: { progress: { step_label: s.label, step_number: s.number, total_steps: s.total } } })),
      );
      const done = await setInternState(db, { id: row.id, from: ['provisioning'], patch: { status: 'running', progress: null, hostname: handle.hostname, daemonPid: handle.pid, lastFailureMessage: null } });
      // Suspended or deleted meanwhile: the new daemon must not linger.
      if (!done) await provisioner.stop({ id: row.id, pid: handle.pid });
    } catch (err) {
      await setInternState(db, { id: row.id, from: ['provisioning'], patch: { status: 'failed', progress: null, hostname: null, daemonPid: null, lastFailureMessage: message(err) } });
    }
  }

  async function runDestroy(row: InternRow) {
    try {
      await provisioner.destroy({ id: row.id, pid: row.daemonPid });
      if (row.apiKeyId) await revokeKey(db, row.apiKeyId);
      await deleteInternRow(db, row.id);
    } catch (err) {
      await setInternState(db, { id: row.id, patch: { status: 'destroy_failed', progress: null, lastFailureMessage: message(err) } });
    }
  }

  return {
    async provision(row) {
      if (row.status === 'destroying' || row.status === 'destroy_failed') throw deleting();
      if (row.status === 'provisioning') return;
      const first = { step_label: 'queued', step_number: 1, total_steps: 3 };
      const claimed = await setInternState(db, { id: row.id, from: [row.status], patch: { status: 'provisioning', progress: first, lastFailureMessage: null } });
      if (!claimed) return;
      background('provision', row.id, () => runProvision(claimed));
    },
    async suspend(row) {
      if (row.status === 'destroying' || row.status === 'destroy_failed') throw deleting();
      await setInternState(db, { id: row.id, patch: { status: 'stopped', progress: null } });
      await provisioner.stop({ id: row.id, pid: row.daemonPid });
      await setInternState(db, { id: row.id, from: ['stopped'], patch: { hostname: null, daemonPid: null } });
    },
    async destroy(row) {
      if (row.status === 'destroying') return;
      const claimed = await setInternState(db, { id: row.id, from: [row.status], patch: { status: 'destroying', progress: null } });
      if (claimed) background('delete', row.id, () => runDestroy(claimed));
    },
    async readopt() {
      for (const row of await internsWithDaemons(db)) {
        const stale = Date.now() - row.updatedAt.getTime() > STALE_MS;
        if (row.status === 'running' && !row.hostname) {
          // Restored from a backup: it starts again on its files.
          const claimed = await setInternState(db, { id: row.id, from: ['running'], patch: { status: 'provisioning', progress: { step_label: 'queued', step_number: 1, total_steps: 3 } } });
          if (claimed) background('provision', row.id, () => runProvision(claimed));
        } else if (row.status === 'running') {
          if (row.hostname && (await provisioner.healthy(row.hostname))) continue;
          log.warn({ intern: row.id }, 'intern daemon not reachable at gateway start; marked failed');
          await setInternState(db, { id: row.id, from: ['running'], patch: { status: 'failed', hostname: null, lastFailureMessage: 'the daemon was not running when the gateway started; provision the intern again' } });
        } else if (row.status === 'provisioning' && stale) {
          await setInternState(db, { id: row.id, from: ['provisioning'], patch: { status: 'failed', progress: null, lastFailureMessage: 'provisioning was interrupted; provision the intern again' } });
        } else if (row.status === 'destroying' && stale) {
          const fresh = await getInternById(db, row.id);
          if (fresh) background('delete', row.id, () => runDestroy(fresh));
        }
      }
    },
    noticeRefused({ id, hostname }) {
      if (probing.has(id)) return;
      probing.add(id);
      background('health check', id, async () => {
        try {
          const before = await getInternById(db, id);
          if (before?.status !== 'running' || before.hostname !== hostname || (await provisioner.healthy(hostname))) return;
          // Guarded by the address too: a provision meanwhile has started a new daemon elsewhere.
          const marked = await setInternState(db, {
            id,
            from: ['running'],
            hostname,
            patch: { status: 'failed', hostname: null, daemonPid: null, lastFailureMessage: 'the daemon stopped answering (connection refused); provision the intern again' },
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
    async idle() {
      while (tasks.size) await Promise.all([...tasks]);
    },
  };
}
