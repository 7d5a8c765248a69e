// A gateway as its own OS process (`src/main.ts`, or with `built` the compiled `dist/main.js`), for tests that kill and restart it or run two
// on one database. Reads the bootstrap keys from the data dir. Daemons it provisions are found
// (for cleanup) by their command line naming this data dir.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Bootstrap } from '../../src/gateway/access/bootstrap.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
/** The compiled gateway `npm start` runs (scripts/build.mjs). */
export const BUILT_MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** Builds dist/ when a source file is newer than the last build, as `npm start` does; throws with the compiler's output if it fails. */
export function ensureBuilt(): void {
  const r = spawnSync(
    process.execPath,
    [fileURLToPath(new URL('../../scripts/build.mjs', import.meta.url)), '--if-stale'],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`the build failed:\n${r.stdout}${r.stderr}`);
}

export type GatewayProcess = {
  dataDir: string;
  url: string;
  child: ChildProcess;
  keys: () => Bootstrap;
  kill(signal?: NodeJS.Signals): Promise<void>;
};

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** A command line that runs `argv` with its open-file limit raised to `fdLimit` where this user may (root may exceed the hard limit); else it inherits ours. */
export function withFdLimit(argv: string[], fdLimit: number): string[] {
  return ['/bin/sh', '-c', `ulimit -n ${fdLimit} 2>/dev/null; exec "$@"`, 'sh', ...argv];
}

/** `fdLimit`: see withFdLimit. */
export async function startGatewayProcess(opts: {
  dataDir: string;
  port: number;
  env?: Record<string, string>;
  nodeArgs?: string[];
  built?: boolean;
  /** Another build's dist/main.js (bench/baseline.ts); implies built. */
  main?: string;
  fdLimit?: number;
}): Promise<GatewayProcess> {
  // Only what the caller passes: an inherited DATABASE_URL must not point it at a shared schema,
  // nor an inherited proxy take its requests to loopback providers.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(DATABASE_URL|REDIS_URL|COHORT_)/.test(k) && !/^(https?|no)_proxy$/i.test(k),
    ),
  );
  const main = opts.main ? [opts.main] : opts.built ? [BUILT_MAIN] : ['--import', 'tsx', MAIN];
  const argv = [process.execPath, ...(opts.nodeArgs ?? []), ...main];
  const [cmd, ...args] = opts.fdLimit ? withFdLimit(argv, opts.fdLimit) : argv;
  const child = spawn(cmd!, args, {
    env: {
      ...inherited,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(opts.port),
      COHORT_DATA_DIR: opts.dataDir,
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${opts.port}/api/v1`;
  // Ready when it answers HTTP (whatever its log level).
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`gateway exited: ${out}`);
    const ok = await fetch(`${url}/openapi.json`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.stdout!.resume();
  return {
    url,
    dataDir: opts.dataDir,
    child,
    keys: () => JSON.parse(readFileSync(join(opts.dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

/** Kills daemons whose command line names a directory under `<dataDir>/interns`, or a warm spare
 * under `<dataDir>/run/spares` (the local provisioner's layout): all of them, or one intern's. */
export function killDaemonsUnder(dataDir: string, internId = '') {
  let spare = internId ? '' : join(dataDir, 'run', 'spares');
  try {
    if (internId) spare = readFileSync(join(dataDir, 'interns', internId, 'spare'), 'utf8').trim();
  } catch {}
  const names = [join(dataDir, 'interns', internId), ...(spare ? [spare] : [])];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Each daemon leads its own process group (its agent is in it too).
      const line = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (names.some((n) => line.includes(n))) process.kill(-Number(entry), 'SIGKILL');
    } catch {}
  }
}

/** Gateway processes and data dirs a test file starts; cleanup() kills them and their daemons and removes the dirs. */
export function gatewayProcesses(prefix: string) {
  const dirs: string[] = [];
  const procs: GatewayProcess[] = [];
  return {
    dataDir(): string {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    async start(opts: Parameters<typeof startGatewayProcess>[0]): Promise<GatewayProcess> {
      const gw = await startGatewayProcess(opts);
      procs.push(gw);
      return gw;
    },
    async cleanup(): Promise<void> {
      for (const p of procs) await p.kill();
      for (const d of dirs) {
        killDaemonsUnder(d);
        rmSync(d, { recursive: true, force: true });
      }
    },
  };
}
