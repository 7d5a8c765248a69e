// Local provisioner: each daemon is a detached process (its own process group, so it outlives
// the gateway) with its own directory `<data dir>/interns/<id>`, output in `daemon.log` there.
// Its secret, the intern's key, model and instructions go in its environment, never in argv.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeArgsFor } from '../entry.ts';
import { daemonHealthy } from '../relay/client.ts';
import type { DaemonHandle, DaemonSpec, Provisioner } from './index.ts';

const STEPS = 3;

export type LocalProvisionerOptions = {
  dataDir: string;
  /** Passed to the daemon: interaction deadline, replay buffer, log level. */
  daemonEnv?: Record<string, string>;
  startTimeoutMs?: number;
};

/** A minimal environment: nothing of the gateway's own (database URL, master key) reaches the intern. */
function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'NODE_OPTIONS'];
  return Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Guards against pid reuse: only signal a process whose command line names this intern's directory. */
function ours(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    return alive(pid);
  }
}

async function readListening(logFile: string, from: number, child: { exited: boolean }, timeoutMs: number): Promise<string> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const text = existsSync(logFile) ? readFileSync(logFile).subarray(from).toString('utf8') : '';
    const m = /\{"listening":"(http:\/\/[^"]+)"\}/.exec(text);
    if (m) return m[1]!;
    if (child.exited) throw new Error(`the daemon exited during start: ${text.trim().split('\n').slice(-3).join(' | ').slice(0, 500)}`);
    await sleep(50);
  }
  throw new Error(`the daemon did not report its address within ${timeoutMs} ms`);
}

export function createLocalProvisioner(opts: LocalProvisionerOptions): Provisioner {
  const dirOf = (id: string) => join(opts.dataDir, 'interns', id);

  async function stop(intern: { id: string; pid: number | null }) {
    const pid = intern.pid;
    if (!pid || !alive(pid) || !ours(pid, dirOf(intern.id))) return;
    // The daemon alone first: it cancels its runs and waits for its agent to confirm, so open
    // streams end `run_ended`; a signal to the whole group would kill the agent under it.
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(50);
    // Then whatever is left in its process group (a hung daemon, an agent, a shell command).
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }

  return {
    async start(spec: DaemonSpec, onStep): Promise<DaemonHandle> {
      const dir = dirOf(spec.internId);
      await onStep({ label: 'preparing the work directory', number: 1, total: STEPS });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const logFile = join(dir, 'daemon.log');
      const from = existsSync(logFile) ? readFileSync(logFile).length : 0;
      await onStep({ label: 'starting the daemon', number: 2, total: STEPS });
      const out = openSync(logFile, 'a', 0o600);
      const child = spawn(process.execPath, [...nodeArgsFor(import.meta.url, '../daemon/main'), '--dir', dir], {
        cwd: dir,
        detached: true,
        stdio: ['ignore', out, out],
        env: {
          ...baseEnv(),
          ...opts.daemonEnv,
          COHORT_DAEMON_SECRET: spec.secret,
          COHORT_INTERN_DIR: dir,
          COHORT_INTERN_ID: spec.internId,
          COHORT_DAEMON_HOST: '127.0.0.1',
          COHORT_DAEMON_PORT: '0',
          COHORT_AGENT_BASE_URL: spec.gatewayUrl,
          COHORT_AGENT_API_KEY: spec.apiKey,
          COHORT_AGENT_MODEL: spec.model,
          COHORT_AGENT_INSTRUCTIONS: spec.instructions,
        },
      });
      closeSync(out);
      const state = { exited: false };
      child.on('exit', () => (state.exited = true));
      child.on('error', () => (state.exited = true));
      child.unref();
      const pid = child.pid ?? null;
      try {
        const hostname = await readListening(logFile, from, state, opts.startTimeoutMs ?? 20_000);
        await onStep({ label: 'waiting for the daemon to be healthy', number: 3, total: STEPS });
        if (!(await daemonHealthy(hostname, 5_000))) throw new Error('the daemon did not answer its health check');
        return { hostname, pid };
      } catch (err) {
        await stop({ id: spec.internId, pid });
        throw err;
      }
    },
    stop,
    async destroy(intern) {
      await stop(intern);
      rmSync(dirOf(intern.id), { recursive: true, force: true });
    },
    healthy: (hostname) => daemonHealthy(hostname),
  };
}
