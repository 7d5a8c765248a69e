// Short-lived processes started through a small helper process instead of by fork of this one:
// forking costs in proportion to the memory the forking process has touched (about 11 ms at
// 640 MB, 1.4 ms for a fresh Node), and a gateway with an embedded database has touched hundreds of
// MB. The helper (spawner-child.mjs) is started on first use, stops when idle, and runs each job as
// given: command, working directory, uid and gid, and files for its stdin and stdout.
// The helper is let go of after IDLE_MS without a job; nothing of it holds this process open.
// May import: node built-ins.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Plain JavaScript, copied into dist/ by the build: it starts without a TypeScript loader. */
const HELPER = fileURLToPath(new URL('./spawner-child.mjs', import.meta.url));

export type Job = {
  file: string;
  args: string[];
  cwd: string;
  /** Taken by the helper's child before it runs the command (setgroups, setgid, setuid). */
  uid?: number;
  gid?: number;
  /** A file for the command's stdin (read) or its stdout (written, 0600); otherwise nothing. */
  stdin?: string;
  stdout?: string;
};

export type JobResult = { code: number | null; stderr: string };

/** What the helper sends back for job `id`: its result, or why it could not start. */
export type JobReply = { id: number } & ({ code: number | null; stderr: string } | { error: string });

export type Spawner = { run(job: Job): Promise<JobResult>; close(): void };

const IDLE_MS = 10_000;

export function createSpawner(): Spawner {
  let helper: ChildProcess | null = null;
  let next = 0;
  let idle: NodeJS.Timeout | undefined;
  const hold = (child: ChildProcess, held: boolean) => {
    if (held) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  };
  const close = () => {
    clearTimeout(idle);
    helper?.disconnect();
    helper = null;
  };
  const pending = new Map<number, { resolve(r: JobResult): void; reject(e: Error): void }>();
  const start = (): ChildProcess => {
    // Nothing of this process's environment (database URL, master key) goes to the helper.
    const child = spawn(process.execPath, [HELPER], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.on('message', (m: JobReply) => {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if ('error' in m) p?.reject(new Error(m.error));
      else p?.resolve({ code: m.code, stderr: m.stderr });
      if (pending.size) return;
      hold(child, false);
      idle = setTimeout(close, IDLE_MS).unref();
    });
    child.on('exit', () => {
      if (helper === child) helper = null;
      for (const [id, p] of pending) {
        pending.delete(id);
        p.reject(new Error('the process helper exited'));
      }
    });
    return child;
  };
  return {
    run(job) {
      clearTimeout(idle);
      helper ??= start();
      hold(helper, true);
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        helper!.send({ id, job });
      });
    },
    close,
  };
}
