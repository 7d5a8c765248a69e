// Runs one shell command, sandboxed with bubblewrap or not, collecting its output with a cap.
import { type ChildProcessByStdio, spawn, spawnSync } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { BWRAP_PATH, innerArgv, confinedArgv, FILTER_FD } from './bwrap.ts';

export type ShellResult = {
  exitCode: number | null;
  signal: string | null;
  output: string;
  truncated: boolean;
  /** Killed because it ran past `timeoutMs`. */
  timedOut: boolean;
};

export type RunShellOptions = {
  command: string;
  workDir: string;
  sandboxed: boolean;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  maxOutputBytes?: number;
  bwrapPath?: string;
  /** The command (its whole process group) is killed after this long; 0 or unset: no limit. */
  timeoutMs?: number;
  /** The tenant's seccomp program (seccomp.ts): the command runs under it, sandboxed or not, in a
   * user namespace that can make no other. Inside an intern's runtime only (an unprivileged uid). */
  filter?: Buffer;
  /** Called with the pid of the process started, which leads a session of its own (the sandbox's
   * command included: innerArgv makes no second one). */
  onStart?: (pid: number) => void;
};

const probed = new Map<string, boolean>();

/** Whether bubblewrap can create a sandbox here (installed, and namespaces allowed). Cached. */
export function sandboxAvailable(bwrapPath = BWRAP_PATH): boolean {
  let ok = probed.get(bwrapPath);
  if (ok === undefined) {
    ok = spawnSync(bwrapPath, innerArgv({ workDir: '/', command: 'true' }), { stdio: 'ignore' }).status === 0;
    probed.set(bwrapPath, ok);
  }
  return ok;
}

/** Hands bubblewrap its seccomp program on a pipe (it reads to the end, then closes it). */
export function writeFilter(pipe: Writable, program: Buffer): void {
  // bubblewrap that fails to start closes the pipe unread; its exit says why.
  pipe.on('error', () => {});
  pipe.end(program);
}

export function runShell(opts: RunShellOptions): Promise<ShellResult> {
  const max = opts.maxOutputBytes ?? 64 * 1024;
  // One pipe for the command's stdout and stderr, so the output reads in the order it was written
  // (two pipes are read in whatever order the event loop finds them ready).
  const script = `exec 2>&1\n${opts.command}`;
  const bwrap = opts.bwrapPath ?? BWRAP_PATH;
  const filtered = opts.filter !== undefined;
  const [file, args]: [string, string[]] = opts.sandboxed
    ? [bwrap, innerArgv({ workDir: opts.workDir, command: script, filtered })]
    : filtered
      ? [bwrap, confinedArgv({ workDir: opts.workDir, argv: ['/bin/sh', '-c', script] })]
      : ['/bin/sh', ['-c', script]];
  return new Promise((resolve, reject) => {
    // detached: its own process group, so cancelling kills the whole command tree.
    const child = spawn(file, args, {
      cwd: opts.workDir,
      env: opts.env,
      stdio: filtered ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      detached: true,
    }) as ChildProcessByStdio<null, Readable, Readable>;
    if (filtered) writeFilter(child.stdio[FILTER_FD] as Writable, opts.filter!);
    if (child.pid) opts.onStart?.(child.pid);
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    const collect = (b: Buffer) => {
      if (size >= max) return void (truncated = true);
      chunks.push(b.subarray(0, max - size));
      truncated ||= b.length > max - size;
      size += Math.min(b.length, max - size);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    opts.signal?.addEventListener('abort', kill, { once: true });
    let timedOut = false;
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          kill();
        }, opts.timeoutMs)
      : null;
    child.on('error', reject);
    child.on('close', (code, sig) => {
      opts.signal?.removeEventListener('abort', kill);
      if (timer) clearTimeout(timer);
      resolve({ exitCode: code, signal: sig, output: Buffer.concat(chunks).toString('utf8'), truncated, timedOut });
    });
  });
}
