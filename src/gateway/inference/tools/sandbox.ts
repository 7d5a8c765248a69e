// The ephemeral sandbox of one request's bash, shell and apply_patch calls (docs/isolation.md,
// "Server tools"): opened at the request's first such call, shared by its later ones, destroyed
// when the request ends. Isolated as an intern is, on a uid of the installation's intern range
// claimed for it (and quarantined after, as an intern's); what the sandbox is, is
// src/runtime/sandbox/tool.ts. Inside, its runner takes one request a line on stdin: run a
// command, read, write or remove a file under /work; it answers a line each.
// May import: node built-ins, ../../../runtime/sandbox, ./types.ts.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { FILTER_FD, writeFilter } from '../../../runtime/sandbox/index.ts';
import { toolSandboxCommand } from '../../../runtime/sandbox/tool.ts';
import { type Sandbox, ToolError, type ToolsEnv } from './types.ts';

/** What the gateway lends the sandboxes: uids of the interns' range, and the tenant's seccomp program. */
export type SandboxHost = {
  claimUid(owner: string): number;
  releaseUid(owner: string): void;
  /** The uid pool's directory (<data dir>/run/uids), for sweeping claims of gateways that died. */
  uidDir: string;
  filter: Buffer;
};

/** Bytes of a command's stdout and stderr (together) that are kept. */
export const EXEC_MAX_BYTES = 256 * 1024;

/** The owner recorded on a sandbox's uid claim: this host and process, so a dead gateway's claims can be released. */
const ownerOf = (id: string) => `tool-sandbox ${hostname()} ${process.pid} ${id}`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Releases the uids of sandboxes whose gateway process on this host is gone. */
export function sweepStaleClaims(host: SandboxHost): void {
  let files: string[] = [];
  try {
    files = readdirSync(host.uidDir).filter((f) => /^\d+$/.test(f));
  } catch {
    return;
  }
  for (const f of files) {
    let owner = '';
    try {
      owner = readFileSync(join(host.uidDir, f), 'utf8');
    } catch {
      continue;
    }
    const m = /^tool-sandbox (\S+) (\d+) /.exec(owner);
    if (m && m[1] === hostname() && !alive(Number(m[2]))) host.releaseUid(owner);
  }
}

export type OpenSandbox = Sandbox & { close(): Promise<void> };

export async function openSandbox(o: {
  env: NonNullable<ToolsEnv['sandbox']>;
  host: SandboxHost;
  id: string;
}): Promise<OpenSandbox> {
  const owner = ownerOf(o.id);
  const uid = o.host.claimUid(owner);
  const [file, args] = toolSandboxCommand({ ...o.env, uid, nodePath: process.execPath });
  let child: ChildProcessByStdio<Writable, Readable, Readable>;
  try {
    child = spawn(file, args, {
      env: {},
      cwd: '/',
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    }) as unknown as ChildProcessByStdio<Writable, Readable, Readable>;
  } catch (err) {
    o.host.releaseUid(owner);
    throw new ToolError(`the sandbox could not start: ${(err as Error).message}`);
  }
  writeFilter((child as unknown as { stdio: Writable[] }).stdio[FILTER_FD]!, o.host.filter);
  const pending = new Map<number, { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  let next = 1;
  let ended: Error | null = null;
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 4096) stderr += d;
  });
  let buf = '';
  const limit = EXEC_MAX_BYTES * 8 + 65_536;
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    if (buf.length > limit && buf.indexOf('\n') < 0) return child.kill('SIGKILL');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let m: { id?: unknown; error?: unknown } & Record<string, unknown>;
      try {
        m = JSON.parse(line);
      } catch {
        continue;
      }
      const p = typeof m.id === 'number' ? pending.get(m.id) : undefined;
      if (!p) continue;
      pending.delete(m.id as number);
      if (typeof m.error === 'string') p.reject(new ToolError(m.error));
      else p.resolve(m);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const fail = (why: string) => {
    ended ??= new ToolError(why);
    for (const p of pending.values()) p.reject(ended);
    pending.clear();
  };
  child.once('error', (e) => fail(`the sandbox could not start: ${e.message}`));
  void exited.then(() => fail(`the sandbox ended${stderr.trim() ? `: ${stderr.trim().slice(0, 300)}` : ''}`));
  child.stdin.on('error', () => {});

  const ask = (msg: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>> => {
    if (ended) return Promise.reject(ended);
    if (signal.aborted) return Promise.reject(new ToolError('cancelled'));
    const id = next++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        child.stdin.write(`${JSON.stringify({ id: next++, op: 'kill', target: id })}\n`);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      pending.set(id, {
        resolve: (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      child.stdin.write(`${JSON.stringify({ id, ...msg })}\n`);
    });
  };

  return {
    async exec({ argv: cmd, timeoutMs, signal }) {
      const r = await ask({ op: 'exec', argv: cmd, timeoutMs, max: EXEC_MAX_BYTES }, signal);
      return {
        exitCode: typeof r.exitCode === 'number' ? r.exitCode : null,
        stdout: String(r.stdout ?? ''),
        stderr: String(r.stderr ?? ''),
        truncated: r.truncated === true,
        timedOut: r.timedOut === true,
      };
    },
    async read(path, signal) {
      const r = await ask({ op: 'read', path }, signal);
      return typeof r.content === 'string' ? r.content : null;
    },
    async write(path, content, signal) {
      await ask({ op: 'write', path, content }, signal);
    },
    async remove(path, signal) {
      await ask({ op: 'remove', path }, signal);
    },
    async close() {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
      await exited;
      o.host.releaseUid(owner);
    },
  };
}
