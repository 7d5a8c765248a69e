// The lifecycle's background work in this process: provisions, deletes, health checks and wakes
// under way, so that a delete waits for its intern's provision and wake, and shutdown (idle) for all.
import type { Logger } from '../../shared/log.ts';

export function createBackgroundWork(log: Logger) {
  const tasks = new Set<Promise<void>>();
  /** Provisions this process is running, by intern: a delete waits for its intern's to stop. */
  const provisioning = new Map<string, Promise<void>>();
  /** Deletes this process is running. */
  const deleting = new Set<string>();
  const wakes = new Map<string, Promise<unknown>>();
  return {
    provisioning,
    deleting,
    /** Runs `fn` in the background; its failure is logged as `<name> failed`. */
    background(name: string, id: string, fn: () => Promise<void>): Promise<void> {
      const t = fn()
        .catch((err) => log.error({ err, intern: id }, `${name} failed`))
        .finally(() => tasks.delete(t));
      tasks.add(t);
      return t;
    },
    /** Settles when the intern's wake under way here (if any) has, whichever way it ended. */
    wakeOf: (id: string) => wakes.get(id)?.catch(() => {}),
    trackWake(id: string, wake: Promise<unknown>) {
      wakes.set(id, wake);
      void wake.catch(() => {}).finally(() => wakes.get(id) === wake && wakes.delete(id));
    },
    async idle() {
      while (tasks.size) await Promise.all([...tasks]);
    },
  };
}
