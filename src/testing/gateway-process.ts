// A gateway as its own OS process (`src/main.ts`), for tests that kill and restart it or run two
// on one database. Reads the bootstrap keys from the data dir. Daemons it provisions are found
// (for cleanup) by their command line naming this data dir.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Bootstrap } from '../services/bootstrap.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

export type GatewayProcess = { url: string; child: ChildProcess; keys: () => Bootstrap; kill(signal?: NodeJS.Signals): Promise<void> };

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export async function startGatewayProcess(opts: { dataDir: string; port: number; env?: Record<string, string> }): Promise<GatewayProcess> {
  // Only what the caller passes: an inherited DATABASE_URL must not point it at a shared schema.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|REDIS_URL|COHORT_)/.test(k)));
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...inherited, LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: String(opts.port), COHORT_DATA_DIR: opts.dataDir, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:[^"]+)"[^\n]*cohort gateway listening|cohort gateway listening[^\n]*"url":"(http:[^"]+)"/.exec(out);
      if (m) resolve(m[1] ?? m[2]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${out.slice(-2000)}`)));
  });
  child.stdout!.resume();
  return {
    url,
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

/** Kills daemons whose command line names a directory under `<dataDir>/interns` (the local provisioner's layout). */
export function killDaemonsUnder(dataDir: string, internId = '') {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Each daemon leads its own process group (its agent is in it too).
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(join(dataDir, 'interns', internId))) process.kill(-Number(entry), 'SIGKILL');
    } catch {}
  }
}
