// Runs the real `cohort` CLI (bin/cohort.mjs) as a child process, and starts gateways on a store
// the CLI also uses (a PGlite data dir, or one PostgreSQL schema), for tests and the benchmark.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../../src/gateway/config.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { postgresUrl } from './gateway.ts';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(REPO, 'bin/cohort.mjs');

/** Runs `cohort ARGS` in a clean environment (none of this process's store or cohort settings)
 * plus `env`; resolves with its exit code and output. */
export function runCohort(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|REDIS_URL|COHORT_)/.test(k)),
  );
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...clean, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

export type CliResult = { code: number; stdout: string; stderr: string; json: any };

/** One shared store: its data dir, and for PostgreSQL a fresh schema dropped by cleanup(). */
export type SharedStore = {
  kind: 'pglite' | 'postgres';
  dataDir: string;
  env: Record<string, string>;
  cli(args: string[], extraEnv?: Record<string, string>): Promise<CliResult>;
  gateway(env?: Record<string, string>): Promise<Gateway>;
  cleanup(): Promise<void>;
};

export function sharedStore(kind: 'pglite' | 'postgres'): SharedStore {
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-cli-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const env: Record<string, string> =
    kind === 'postgres'
      ? { DATABASE_URL: postgresUrl!, COHORT_PG_SCHEMA: schema, COHORT_DATA_DIR: dataDir }
      : { COHORT_DATA_DIR: dataDir };
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  delete base.DATABASE_URL;
  delete base.REDIS_URL;
  return {
    kind,
    dataDir,
    env,
    cli: (args, extraEnv = {}) =>
      new Promise((resolve) => {
        execFile(
          process.execPath,
          [BIN, ...args],
          { cwd: REPO, env: { ...base, ...env, ...extraEnv } },
          (err, stdout, stderr) => {
            let json: unknown = null;
            try {
              json = JSON.parse(stdout);
            } catch {}
            resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
          },
        );
      }),
    gateway: (extra = {}) => startGateway({ config: loadConfig({ LOG_LEVEL: 'silent', PORT: '0', ...env, ...extra }) }),
    async cleanup() {
      if (kind === 'postgres') {
        const c = new pg.Client({ connectionString: postgresUrl });
        await c.connect();
        await c.query(`drop schema if exists ${schema} cascade`);
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function get(gw: Gateway, path: string, key: string) {
  const res = await fetch(gw.url + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
}
