// Short-lived processes started through a small helper process instead of by fork of this one:
// forking costs in proportion to the memory the forking process has touched (about 11 ms at
// 640 MB, 1.4 ms for a fresh Node), and a gateway with an embedded database has touched hundreds of
// MB. The helper (spawner-child.mjs) is started on first use, stops when idle, and runs each job as
// given: command, working directory, uid and gid, and files for its stdin and stdout, or
// (connect) Unix sockets for its stdin, its stdout or its descriptor 3 (both ways) that this
// process holds the other end of while the command runs: bytes cross as they are made,
// with the socket's backpressure, and closing this end stops a command that is still writing
// (EPIPE) or ends what it reads. This process dials each connection (the helper listens), so
// that an end may be read into buffers of the reader's own (net's onread) rather than into a
// new buffer for each read. A job may also be given bytes to read on descriptor 3 (a seccomp program for bubblewrap)
// and a time limit (its process group killed).
// The helper is let go of after IDLE_MS without a job; nothing of it holds this process open.
// May import: node built-ins.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as dial, type OnReadOpts, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  /** Paths of Unix sockets that the helper listens on (connect), says so, and connects the
   * command's stdin, stdout or descriptor 3 to once this process has dialled each; descriptor 3 is
   * relayed through a pipe, blocking on the command's side. */
  sockets?: Partial<Record<End, string>>;
  /** Bytes (base64) the command reads on descriptor 3, a pipe: bubblewrap's --seccomp 3. */
  fd3?: string;
  /** The command's process group is killed (SIGKILL) after this long; its result says so. */
  timeoutMs?: number;
};

export type JobResult = { code: number | null; stderr: string; timedOut?: true };

/** What the helper sends back for job `id`: that its sockets listen (connect), its result, or why
 * it could not start. */
export type JobReply = { id: number } & (JobResult | { error: string } | { listening: true });

/** The command's descriptors that connect() can hand this process the other end of. */
export type End = 'stdin' | 'stdout' | 'fd3';

/** A job connected to this process by its ends; `result` settles when the command has ended. */
export type Connected<E extends End> = { ends: Record<E, Socket>; result: Promise<JobResult> };

export type Spawner = {
  run(job: Job): Promise<JobResult>;
  /** Runs `job` with each of `ends` a socket whose other end this process holds; an end given in
   * `onread` is read that way (net's onread: into the caller's buffers, its callback instead of
   * 'data'), from the moment it is connected. */
  connect<E extends End>(
    job: Omit<Job, 'sockets'>,
    ends: E[],
    o?: { onread?: Partial<Record<E, OnReadOpts>> },
  ): Promise<Connected<E>>;
  close(): void;
};

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
  // The sockets of streamed jobs live in a directory of this spawner's own (0700, under the
  // system's temporary directory: a socket's path is bounded to 107 bytes, which a data dir's
  // may pass), made on first use and removed with the spawner or at this process's exit.
  let sockets: string | null = null;
  const removeSockets = () => {
    if (sockets) rmSync(sockets, { recursive: true, force: true });
    sockets = null;
  };
  const socketPath = () => {
    if (!sockets) {
      sockets = mkdtempSync(join(tmpdir(), 'cohort-spawner-'));
      process.once('exit', removeSockets);
    }
    const path = join(sockets, randomBytes(8).toString('hex'));
    if (Buffer.byteLength(path) > 107) throw new Error(`the socket path ${path} is too long (TMPDIR)`);
    return path;
  };
  const close = () => {
    clearTimeout(idle);
    helper?.disconnect();
    helper = null;
    removeSockets();
  };
  const pending = new Map<number, { resolve(r: JobResult): void; reject(e: Error): void; listening?(): void }>();
  const start = (): ChildProcess => {
    // Nothing of this process's environment (database URL, master key) goes to the helper.
    const child = spawn(process.execPath, [HELPER], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.on('message', (m: JobReply) => {
      const p = pending.get(m.id);
      if ('listening' in m) return p?.listening?.();
      pending.delete(m.id);
      if ('error' in m) p?.reject(new Error(m.error));
      else p?.resolve({ code: m.code, stderr: m.stderr, ...(m.timedOut ? { timedOut: true } : {}) });
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
  const run = (job: Job, listening?: () => void): Promise<JobResult> => {
    clearTimeout(idle);
    helper ??= start();
    hold(helper, true);
    const id = next++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, ...(listening ? { listening } : {}) });
      helper!.send({ id, job });
    });
  };
  const connect = async <E extends End>(
    job: Omit<Job, 'sockets'>,
    ends: E[],
    o: { onread?: Partial<Record<E, OnReadOpts>> } = {},
  ): Promise<Connected<E>> => {
    const paths = ends.map(() => socketPath());
    let listening!: () => void;
    const listened = new Promise<void>((resolve) => (listening = resolve));
    const result = run({ ...job, sockets: Object.fromEntries(ends.map((end, i) => [end, paths[i]!])) }, listening);
    // A job whose sockets could not listen ends (rejects) without saying they do.
    await Promise.race([listened, result]);
    const sockets = await Promise.all(
      ends.map(
        (end, i) =>
          new Promise<Socket>((resolve, reject) => {
            const onread = o.onread?.[end];
            const socket = dial({ path: paths[i]!, ...(onread ? { onread } : {}) });
            socket.once('error', reject).once('connect', () => {
              socket.off('error', reject);
              resolve(socket);
            });
          }),
      ),
    ).catch((err: Error) => {
      // The helper gives up on the connections it waits for (its result says so).
      result.catch(() => {});
      throw err;
    });
    return { ends: Object.fromEntries(ends.map((end, i) => [end, sockets[i]!])) as Record<E, Socket>, result };
  };
  return {
    run,
    connect,
    close,
  };
}
