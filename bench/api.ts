// `npm run bench:api`: authenticated GET /workspaces/{id} and POST /workspaces (a unique slug per
// request) at 50 connections against a gateway in its own child process, as `npm start` runs it,
// on PGlite and (with DATABASE_URL) on PostgreSQL, at LOG_LEVEL info (production) and warn.
// Prints a markdown table: req/s, p50, p99 (autocannon's percentiles), errors, the gateway's CPU
// time per request (steadier than req/s on a shared machine) and its RSS.
// BENCH_DURATION_S (10), BENCH_CONNECTIONS (50), BENCH_LOG_LEVELS (info,warn), BENCH_STORES
// (pglite,postgres), BENCH_ROUTES (read,create), BENCH_CPU_PROF=DIR writes the gateway's CPU
// profiles there.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { BUILT_MAIN, ensureBuilt } from '../test/helpers/gateway-process.ts';

const DURATION = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const LEVELS = (process.env.BENCH_LOG_LEVELS ?? 'info,warn').split(',');
const ROUTES = (process.env.BENCH_ROUTES ?? 'read,create').split(',') as ('read' | 'create')[];
const STORES = (process.env.BENCH_STORES ?? 'pglite,postgres')
  .split(',')
  .filter((s) => s !== 'postgres' || process.env.DATABASE_URL);
const REPO = new URL('../', import.meta.url).pathname;

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

type Gateway = { child: ChildProcess; url: string; key: string; workspaceId: string; stop(): Promise<void> };

async function startGateway(store: string, level: string): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-'));
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    COHORT_DATA_DIR: dir,
    PORT: String(port),
    LOG_LEVEL: level,
    NODE_ENV: 'production',
  };
  delete env.REDIS_URL;
  if (store === 'postgres') env.COHORT_PG_SCHEMA = schema;
  else delete env.DATABASE_URL;
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const log = join(dir, 'gateway.log');
  const child = spawn(process.execPath, [...prof, BUILT_MAIN], {
    cwd: REPO,
    env,
    stdio: ['ignore', openSync(log, 'w'), 'inherit'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const url = `http://127.0.0.1:${port}/api/v1`;
  async function stop() {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    if (store === 'postgres') {
      const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
    rmSync(dir, { recursive: true, force: true });
  }
  try {
    for (let i = 0; ; i++) {
      await sleep(100);
      if (child.exitCode !== null) throw new Error(`gateway exited: ${readFileSync(log, 'utf8')}`);
      if (
        await fetch(`${url}/openapi.json`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (i > 1200) throw new Error('gateway did not start within 2 minutes');
    }
    const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8'));
    return { child, url, key: boot.management_key, workspaceId: boot.workspace_id, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function rssMb(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return `${Math.round(kb('VmRSS') / 1024)} (peak ${Math.round(kb('VmHWM') / 1024)})`;
}

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100/s on Linux)
}

async function drive(gw: Gateway, route: 'read' | 'create', duration: number) {
  const headers = { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' };
  if (route === 'read')
    return autocannon({ url: `${gw.url}/workspaces/${gw.workspaceId}`, connections: CONNECTIONS, duration, headers });
  let n = 0;
  const run = randomBytes(3).toString('hex');
  return autocannon({
    url: `${gw.url}/workspaces`,
    connections: CONNECTIONS,
    duration,
    method: 'POST',
    headers,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: `Bench ${++n}`, slug: `b-${run}-${n}` }) }),
      },
    ],
  });
}

// The gateway runs compiled, as `npm start` runs it.
ensureBuilt();
const rows: string[] = [];
for (const store of STORES) {
  for (const level of LEVELS) {
    const gw = await startGateway(store, level);
    try {
      for (const route of ROUTES) {
        await drive(gw, route, 2); // warm-up: JIT, pool connections, key cache
        const cpuBefore = cpuSeconds(gw.child.pid!);
        const r = await drive(gw, route, DURATION);
        const cpuPerReq = ((cpuSeconds(gw.child.pid!) - cpuBefore) * 1e6) / Math.max(1, r.requests.average * DURATION);
        const label = route === 'read' ? 'GET /workspaces/{id}' : 'POST /workspaces';
        rows.push(
          `| ${store} | ${level} | ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.errors + r.non2xx} | ${Math.round(cpuPerReq)} | ${rssMb(gw.child.pid!)} |`,
        );
        process.stderr.write(`${rows.at(-1)}\n`);
      }
    } finally {
      await gw.stop();
    }
  }
}
console.log(
  `\n${CONNECTIONS} connections, ${DURATION} s per row, gateway in its own process (node ${process.version}, ${(await import('node:os')).cpus().length} CPUs)\n`,
);
console.log(
  '| store | LOG_LEVEL | route | req/s | p50 ms | p99 ms | errors + non-2xx | gateway CPU µs/req | gateway RSS MB |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
