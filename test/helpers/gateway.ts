// Starts a real gateway for tests on a loopback port: PGlite in memory by default, or a fresh
// PostgreSQL schema when `postgres: true` and DATABASE_URL is set.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import pg from 'pg';
import { loadConfig } from '../../src/gateway/config.ts';
import { createLogger } from '../../src/shared/log.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import type { Bootstrap } from '../../src/gateway/access/bootstrap.ts';

export type TestGateway = Gateway & { keys: Bootstrap; dataDir: string; call: Call; pgSchema?: string };
export type Call = (
  method: string,
  path: string,
  opts?: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> },
) => Promise<{ status: number; body: any; headers: Headers }>;

export const postgresUrl = process.env.DATABASE_URL;

/** `onDisk`: PGlite in the data dir, as `npm start` has it (`dataDir`: an existing one, removed at close). With `pgSchema`, a further gateway on another's PostgreSQL schema (it neither seeds nor drops it; `keys` are the first one's).
 * `logTo` receives the log lines, at the level `env.LOG_LEVEL` sets (silent by default). */
export async function startTestGateway(
  opts: {
    postgres?: boolean;
    env?: Record<string, string>;
    pgSchema?: string;
    keys?: Bootstrap;
    logTo?: Writable;
    onDisk?: boolean;
    dataDir?: string;
  } = {},
): Promise<TestGateway> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'cohort-test-'));
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', COHORT_DATA_DIR: dataDir, ...opts.env });
  const ownSchema = opts.postgres && !opts.pgSchema;
  const pgSchema = opts.pgSchema ?? (opts.postgres ? `t_${randomBytes(6).toString('hex')}` : undefined);
  if ((opts.postgres || opts.pgSchema) && !postgresUrl)
    throw new Error('postgres requested but DATABASE_URL is not set');
  const gw = await startGateway({
    config,
    log: createLogger({ level: config.logLevel, destination: opts.logTo }),
    store: pgSchema ? { databaseUrl: postgresUrl, pgSchema, poolSize: 4 } : opts.onDisk ? { dataDir } : {},
  });
  const keys = gw.bootstrap ?? opts.keys;
  if (!keys) throw new Error('a gateway on an existing store needs the keys of the one that seeded it');
  const call: Call = async (method, path, o = {}) => {
    const key = o.key === undefined ? keys.management_key : o.key;
    const res = await fetch(gw.url + path, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(o.body !== undefined || o.raw !== undefined ? { 'content-type': 'application/json' } : {}),
        ...o.headers,
      },
      body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, body, headers: res.headers };
  };
  return {
    ...gw,
    keys,
    pgSchema,
    dataDir,
    call,
    async close() {
      await gw.close();
      if (ownSchema) {
        const c = new pg.Client({ connectionString: postgresUrl });
        await c.connect();
        await c.query(`drop schema if exists ${pgSchema} cascade`);
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs a suite on PGlite, and again on PostgreSQL when DATABASE_URL is set (printing why not otherwise). */
export const storeMatrix: { name: string; postgres: boolean }[] = [
  { name: 'pglite', postgres: false },
  ...(postgresUrl ? [{ name: 'postgres', postgres: true }] : []),
];
if (!postgresUrl && !process.env.COHORT_QUIET_SKIP) {
  process.stderr.write('# PostgreSQL variants skipped: DATABASE_URL is not set\n');
}
