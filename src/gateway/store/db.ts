// The store's connection: PGlite in the data dir by default, PostgreSQL with DATABASE_URL.
// Both are driven through Drizzle with the same schema and the same SQL migrations.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { nodeArgsFor } from '../../shared/entry.ts';
import type pg from 'pg';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as schema from './schema.ts';
import { isUniqueViolation } from './errors.ts';
import { scrub, type Logger } from '../../shared/log.ts';
import type { PGlite } from '@electric-sql/pglite';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Runs raw SQL (several statements allowed) inside one transaction holding an advisory lock. */
export type LockedExec = (
  fn: (exec: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<void>,
) => Promise<void>;

/** Runs `fn` with one consistent view of the whole database (a read-only snapshot; backups). */
export type SnapshotRead = <T>(
  fn: (query: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>,
) => Promise<T>;

export type Store = {
  kind: 'pglite' | 'postgres';
  db: Db;
  lockedTransaction: LockedExec;
  snapshot: SnapshotRead;
  close(): Promise<void>;
};

export type StoreOptions = {
  /** PostgreSQL connection string; absent means PGlite. */
  databaseUrl?: string;
  /** Directory for PGlite's files; absent (with no databaseUrl) means an in-memory PGlite. */
  dataDir?: string;
  /** PostgreSQL schema to use (created if missing); lets tests share one database. */
  pgSchema?: string;
  poolSize?: number;
  /**
   * PostgreSQL: the longest a query, or the wait for a connection, may take before it fails
   * (pg's own query_timeout and connectionTimeoutMillis; docs/failure-modes.md). Migrations and
   * snapshots are exempt: they may rightly take long. Absent: no bound. PGlite runs in this
   * process and has none.
   */
  timeoutMs?: number;
  /** Where a lost PostgreSQL connection is reported (a warn line); without it, it is replaced silently. */
  log?: Logger;
  /**
   * Called once if the database goes away for good while open: PGlite's thread exited, so every
   * later query fails. Not called by close(). PostgreSQL never calls it: a lost connection is
   * replaced at the next query.
   */
  onLost?: (err: Error) => void;
};

const LOCK_ID = 774_211_019; // arbitrary constant shared by every cohort process

export async function openStore(opts: StoreOptions): Promise<Store> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts) : openPglite(opts);
}

/** PGlite's initdb unpacks a prepared database with modes 0666 and 0755 (Postgres itself makes its
 * files 0600): a new database is made the operator's alone before anything opens it, and again
 * when it closes. */
function ownerOnly(dir: string): void {
  chmodSync(dir, 0o700);
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    chmodSync(join(e.parentPath, e.name), e.isDirectory() ? 0o700 : 0o600);
}

/** Runs initdb for a new data dir in a child process, so its memory is returned when it exits. */
async function initPgliteDir(dir: string): Promise<void> {
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  const child = spawn(process.execPath, [...nodeArgsFor(import.meta.url, './pglite-init'), dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code === 0) return ownerOnly(dir);
  const reason =
    stderr
      .split('\n')
      .find((l) => /error/i.test(l))
      ?.trim() ?? `exit code ${code}`;
  throw new Error(`could not create the PGlite data dir ${dir}: ${reason}`);
}

async function openPglite({ dataDir, onLost }: StoreOptions): Promise<Store> {
  const dir = dataDir ? join(dataDir, 'pglite') : undefined;
  if (dataDir) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (dir) await initPgliteDir(dir);
  // Loaded only here: a gateway on PostgreSQL never pays for PGlite's code. PGlite runs in a worker thread.
  const [{ PgliteThread }, { drizzle: drizzlePglite }] = await Promise.all([
    import('./pglite-thread.ts'),
    import('drizzle-orm/pglite'),
  ]);
  const client = new PgliteThread({ dir, onLost });
  await client.waitReady;
  return {
    kind: 'pglite',
    db: drizzlePglite({ client: client as unknown as PGlite, schema }) as unknown as Db,
    lockedTransaction: (fn) =>
      client.transaction(async (tx) => {
        await tx.query(`select pg_advisory_xact_lock(${LOCK_ID})`);
        await fn(async (sql) => (await tx.exec(sql)).flatMap((r) => r.rows as Record<string, unknown>[]));
      }) as Promise<void>,
    // PGlite has one connection: a transaction is a snapshot, and writes wait for it.
    snapshot: (fn) =>
      client.transaction((tx) => fn(async (sql) => (await tx.query(sql)).rows as Record<string, unknown>[])),
    // What Postgres wrote while open (pg_internal.init, with WebAssembly's own umask of 022) is made
    // the operator's alone too; the data dir (0700) keeps it from others meanwhile.
    close: async () => {
      await client.close();
      if (dir && existsSync(dir)) ownerOnly(dir);
    },
  };
}

async function openPostgres(url: string, opts: StoreOptions): Promise<Store> {
  const schemaName = opts.pgSchema;
  if (schemaName && !/^[a-z_][a-z0-9_]*$/.test(schemaName)) throw new Error('invalid schema name');
  // Loaded only for PostgreSQL: a gateway on PGlite does not carry the driver (about 3 MB of heap).
  const [{ default: driver }, { drizzle: drizzlePg }] = await Promise.all([
    import('pg'),
    import('drizzle-orm/node-postgres'),
  ]);
  const pool = new driver.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    // How its connections show in pg_stat_activity, unless the URL names its own application_name.
    fallback_application_name: 'cohort',
    ...(opts.timeoutMs ? { connectionTimeoutMillis: opts.timeoutMs, query_timeout: opts.timeoutMs } : {}),
    ...(schemaName ? { options: `-c search_path=${schemaName}` } : {}),
  });
  reportLostConnections(pool, opts.log);
  // "if not exists" still races when several processes start together; the loser's error is harmless
  if (schemaName)
    await pool.query(`create schema if not exists ${schemaName}`).catch((err) => {
      if (!isUniqueViolation(err)) throw err;
    });
  return {
    kind: 'postgres',
    db: drizzlePg({ client: pool, schema }) as unknown as Db,
    lockedTransaction: async (fn) => {
      const c = await pool.connect();
      try {
        await c.query('begin');
        await c.query(unbounded(`select pg_advisory_xact_lock(${LOCK_ID})`));
        await fn(async (sql) => {
          const res = (await c.query(unbounded(sql))) as pg.QueryResult | pg.QueryResult[];
          return (Array.isArray(res) ? res : [res]).flatMap((r) => r.rows);
        });
        await c.query('commit');
      } catch (err) {
        await c.query('rollback').catch(() => {});
        throw err;
      } finally {
        c.release();
      }
    },
    snapshot: async (fn) => {
      const c = await pool.connect();
      try {
        await c.query('begin isolation level repeatable read read only');
        const out = await fn(async (sql) => (await c.query(unbounded(sql))).rows as Record<string, unknown>[]);
        await c.query('commit');
        return out;
      } catch (err) {
        await c.query('rollback').catch(() => {});
        throw err;
      } finally {
        c.release();
      }
    },
    close: () => pool.end(),
  };
}

/** A query without the pool's bound: pg takes a query's own query_timeout over the pool's, and
 * 0 would mean the pool's, so the longest a timer can wait (about 24 days) stands for none. */
const unbounded = (text: string) => ({ text, query_timeout: 2 ** 31 - 1 });

/**
 * A connection dies when PostgreSQL restarts, an operator terminates its backend or the network
 * drops, and pg says so with an 'error' event: on the pool while the connection is idle, on the
 * client while a caller holds it (a transaction between two statements). Unheard, either event
 * would end the process. The pool discards the dead connection and opens a new one for the next
 * query, so this only has to say so, once per connection (pg may report one loss twice); a query
 * that was using it fails on its own.
 */
function reportLostConnections(pool: pg.Pool, log?: Logger): void {
  const reported = new WeakSet<pg.ClientBase>();
  const lost = (err: Error & { code?: string }, client: pg.ClientBase) => {
    if (reported.has(client)) return;
    reported.add(client);
    log?.warn(
      { reason: scrub(err.message), code: err.code },
      'lost a PostgreSQL connection; the next query opens a new one',
    );
  };
  pool.on('error', lost);
  pool.on('connect', (client) => client.on('error', (err) => lost(err, client)));
}
