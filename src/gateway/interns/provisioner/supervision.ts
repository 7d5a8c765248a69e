// Supervision of a daemon's launcher: starting it detached, finding the daemon inside its sandbox,
// raising a claimed spare's priority, and stopping it: the daemon first, then the launcher, done
// only once the sandbox's PID namespace is empty. Every signal first checks that the pid is still
// the intern's (pids are reused).
// May import: src/shared (priority), src/runtime/sandbox (intern.ts), node built-ins.
import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { setGroupPriority } from '../../../shared/priority.ts';
import { RUNTIME_FILTER_FD } from '../../../runtime/sandbox/intern.ts';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Guards against pid reuse: only signal a process whose command line names one of `dirs` (the
 * intern's directory, or the warm spare's it was started in). */
export function ours(pid: number, dirs: string[]): boolean {
  try {
    const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return dirs.some((d) => line.includes(d));
  } catch {
    return alive(pid);
  }
}

export function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The daemon inside a sandbox whose launcher is `pid`: launcher → bwrap → bwrap's init (pid 1 inside) → daemon. */
export function daemonInside(pid: number): number | null {
  let p: number | undefined = pid;
  for (let depth = 0; depth < 3 && p !== undefined; depth++) p = children(p)[0];
  return p ?? null;
}

/** Sets every thread of the daemon inside the sandbox of launcher `pid`, and of its children (the
 * agent), to `threads`, and their session's group to `group`. A claimed spare is raised to a cold
 * start's (the gateway's threads, a new session's group at 0), a starved one to an intern's. */
export function raiseSpare(pid: number, { threads, group }: { threads: number; group: number }): void {
  const daemon = daemonInside(pid);
  if (!daemon) return;
  void setGroupPriority(group, daemon);
  for (const p of [daemon, ...children(daemon)]) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {}
    for (const t of tids) {
      try {
        if (getPriority(Number(t)) > threads) setPriority(Number(t), threads);
      } catch {}
    }
  }
}

/** Runs a program to its end; its stderr becomes the error. */
export function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += String(d)));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${file} failed (${code}): ${err.trim().slice(0, 300)}`)),
    );
  });
}

/** Starts a daemon's launcher detached (it outlives the gateway), its output appended to `logFile`,
 * its stdin a pipe (for the secret, or a spare's assignment); `state.exited` follows its end. */
export function spawnDaemon(o: {
  file: string;
  args: string[];
  cwd: string;
  logFile: string;
  env: Record<string, string>;
  /** A sandbox's seccomp program, for the launcher to pass bubblewrap on RUNTIME_FILTER_FD. */
  filter?: Buffer;
}) {
  const out = openSync(o.logFile, 'a', 0o600);
  const stdio: StdioOptions = o.filter ? ['pipe', out, out, 'ignore', 'pipe'] : ['pipe', out, out];
  const child = spawn(o.file, o.args, { cwd: o.cwd, detached: true, stdio, env: o.env });
  closeSync(out);
  if (o.filter) {
    const pipe = child.stdio[RUNTIME_FILTER_FD] as Writable;
    pipe.on('error', () => {});
    pipe.end(o.filter);
  }
  const state = { exited: false };
  child.on('exit', () => (state.exited = true));
  child.on('error', () => (state.exited = true));
  child.stdin!.on('error', () => {});
  child.unref();
  return { pid: child.pid ?? null, stdin: child.stdin!, state };
}

/** Stops a daemon's launcher `pid` if it is still one of `dirs`' (isolated: a sandbox's launcher;
 * else the daemon itself, leading its process group), and returns once all of it is gone. */
export async function stopLauncher(o: { pid: number | null; dirs: string[]; isolated: boolean }): Promise<void> {
  const { pid, dirs, isolated } = o;
  if (!pid || !alive(pid) || !ours(pid, dirs)) return;
  // The daemon alone first: it cancels its runs and waits for its agent to confirm, so open
  // streams end `run_ended`. Inside a sandbox it is bwrap's grandchild.
  const daemon = isolated ? daemonInside(pid) : pid;
  try {
    if (daemon) process.kill(daemon, 'SIGTERM');
  } catch {}
  for (let i = 0; i < 100 && alive(pid) && (daemon === null || alive(daemon)); i++) await sleep(50);
  // Then the rest: killing the launcher kills bwrap (--die-with-parent) and so its PID namespace,
  // every process the intern started with it; unsandboxed, its process group. The namespace's
  // init (bwrap's inner process) exits only once the kernel has reaped all of them, which under
  // load comes a moment after the launcher is gone: the stop is done when both are. An intern's
  // processes run at a lower priority, so on a busy host a killed one may wait seconds for the
  // CPU it needs to exit: up to 10 s, not the 2 s that a suite loaded to 15 on two cores outran.
  const init = isolated ? (children(children(pid)[0] ?? 0)[0] ?? null) : null;
  try {
    process.kill(isolated ? pid : -pid, 'SIGKILL');
  } catch {}
  for (let i = 0; i < 500 && (alive(pid) || (init !== null && alive(init))); i++) await sleep(20);
}
