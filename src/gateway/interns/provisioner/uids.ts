// Each isolated intern's agent runs as a uid of its own, so the kernel keeps interns apart where
// namespaces do not (process limits count per uid; one uid cannot signal or trace another).
// A uid is claimed by creating `<data dir>/run/uids/<uid>` exclusively (atomic across processes);
// the claim names its intern, and is released when the intern is deleted.
import { mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';

export type UidPool = { claim(internId: string): number; release(internId: string): void };

export function createUidPool(opts: { dir: string; base: number; size: number }): UidPool {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const owners = () =>
    new Map(
      readdirSync(opts.dir).flatMap((f) => {
        try {
          return [[Number(f), readFileSync(join(opts.dir, f), 'utf8')] as const];
        } catch {
          return [];
        }
      }),
    );
  return {
    claim(internId) {
      const taken = owners();
      for (const [uid, owner] of taken) if (owner === internId) return uid;
      for (let uid = opts.base; uid < opts.base + opts.size; uid++) {
        if (taken.has(uid)) continue;
        try {
          const fd = openSync(join(opts.dir, String(uid)), 'wx', 0o600);
          writeSync(fd, internId);
          closeSync(fd);
          return uid;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
      }
      throw new Error(
        `no free intern uid in ${opts.base}..${opts.base + opts.size - 1}; raise COHORT_INTERN_UID_COUNT`,
      );
    },
    release(internId) {
      for (const [uid, owner] of owners()) if (owner === internId) rmSync(join(opts.dir, String(uid)), { force: true });
    },
  };
}
