// `cohort backup FILE`, `cohort restore FILE`, `cohort migrate --to URL`: the operator's commands
// around src/backup. A backup of an embedded store that a running gateway holds is made by that
// gateway, asked on its admin socket; everything else opens the store itself.
// May import: backup, store, provisioner, crypto, config, node built-ins.
import { request } from 'node:http';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from '../gateway/config.ts';
import { createBackup, restoreBackup, summary } from '../backup/index.ts';
import { openStore, type Store } from '../gateway/store/db.ts';
import { migrate } from '../gateway/store/migrate.ts';
import { DataDirBusy, lockDataDir } from '../gateway/store/lock.ts';
import { findMasterKey } from '../gateway/crypto/seal.ts';
import { createLocalProvisioner } from '../gateway/interns/provisioner/index.ts';
import { adminSocketPath } from '../gateway/admin-socket.ts';
import { z } from 'zod';
import { parseJson } from '../shared/parse.ts';

/** What the admin socket answers a command line with (admin.ts's Output). */
const Output = z.object({ json: z.unknown(), lines: z.array(z.string()) });

export const BACKUP_USAGE = [
  "  cohort backup FILE             a consistent archive of the store and every intern's files (also while the gateway runs)",
  '  cohort restore FILE            into an empty data dir (or an empty PostgreSQL database with DATABASE_URL)',
  '  cohort migrate --to URL        copy the embedded store into PostgreSQL (the gateway stopped); intern files stay in the data dir',
];

export class CliRefusal extends Error {}

type Out = (s: string) => void;

function provisionerFor(config: Config) {
  return createLocalProvisioner({ dataDir: config.dataDir, isolation: config.isolation });
}

async function withStore<T>(
  config: Config,
  opts: { databaseUrl?: string; pgSchema?: string },
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const unlock = opts.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  let store: Store | undefined;
  try {
    store = await openStore({
      databaseUrl: opts.databaseUrl,
      dataDir: config.dataDir,
      pgSchema: opts.pgSchema,
      poolSize: 2,
    });
    await migrate(store);
    return await fn(store);
  } finally {
    await store?.close().catch(() => {});
    unlock();
  }
}

/** A refusal of the admin socket (admin-socket.ts). */
const Refused = z.object({ error: z.string() });

/** The reason of a refusal, where the answer gives one. */
function refusalOf(text: string): string | undefined {
  try {
    return Refused.safeParse(JSON.parse(text)).data?.error;
  } catch {
    return undefined;
  }
}

/** Asks the gateway that holds the data dir, through its admin socket, to act; `what` names the act
 * in refusals, and `answer` is the schema of its answer. */
function throughGateway<S extends z.ZodType>(
  dataDir: string,
  path: string,
  body: unknown,
  what: string,
  answer: S,
): Promise<z.output<S>> {
  return new Promise((resolvePromise, reject) => {
    const req = request(
      { socketPath: adminSocketPath(dataDir), method: 'POST', path, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => {
          if (res.statusCode !== 200)
            return reject(
              new CliRefusal(`the running gateway could not ${what}: ${refusalOf(text) ?? res.statusCode}`),
            );
          try {
            resolvePromise(parseJson(answer, text, "the running gateway's answer"));
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('error', (err) =>
      reject(
        new CliRefusal(
          `a gateway holds the data dir but its admin socket does not answer (${(err as Error).message}); stop it and try again`,
        ),
      ),
    );
    req.end(JSON.stringify(body));
  });
}

const backupThroughGateway = (dataDir: string, file: string) =>
  throughGateway(dataDir, '/backup', { file }, 'make the backup', z.unknown());

/** Runs an admin command line in the gateway that holds the data dir (admin-socket.ts). */
export const adminThroughGateway = (dataDir: string, argv: string[]) =>
  throughGateway(dataDir, '/admin', { argv }, 'run the command', Output);

export async function backupCommand(config: Config, fileArg: string, out: Out): Promise<void> {
  const file = resolve(fileArg);
  if (existsSync(file)) throw new CliRefusal(`${file} exists; name a new file`);
  const masterKey = findMasterKey({ dataDir: config.dataDir, configured: config.masterKey });
  if (!masterKey)
    throw new CliRefusal(`no master key in ${config.dataDir} (nor COHORT_MASTER_KEY): is this a cohort data dir?`);
  try {
    const result = await withStore(config, { databaseUrl: config.databaseUrl, pgSchema: config.pgSchema }, (store) =>
      createBackup({ store, provisioner: provisionerFor(config), masterKey, file }),
    );
    out(JSON.stringify(summary(result), null, 2));
  } catch (err) {
    if (!(err instanceof DataDirBusy)) throw err;
    out(JSON.stringify(await backupThroughGateway(config.dataDir, file), null, 2));
  }
}

/** Restores `file` into the store at `databaseUrl` (else the data dir's PGlite); the target is opened only once the archive passed its checks. */
async function restoreWith(config: Config, file: string, o: { databaseUrl?: string; internFiles: boolean }) {
  let target: { close(): Promise<void> } | undefined;
  try {
    return await restoreBackup(file, {
      masterKey: findMasterKey({ dataDir: config.dataDir, configured: config.masterKey }),
      dataDir: config.dataDir,
      internFiles: o.internFiles,
      open: async () => {
        const t = await openTarget(config, { databaseUrl: o.databaseUrl, pgSchema: config.pgSchema });
        target = t;
        return { store: t.store, provisioner: provisionerFor(config) };
      },
    });
  } finally {
    await target?.close();
  }
}

export async function restoreCommand(config: Config, fileArg: string, out: Out): Promise<void> {
  const manifest = await restoreWith(config, resolve(fileArg), { databaseUrl: config.databaseUrl, internFiles: true });
  out(
    JSON.stringify(
      {
        restored: summary({ manifest }),
        next: 'start the gateway on this data dir: interns that were running start again on their files',
      },
      null,
      2,
    ),
  );
}

async function openTarget(
  config: Config,
  o: { databaseUrl?: string; pgSchema?: string },
): Promise<{ store: Store; close(): Promise<void> }> {
  const unlock = o.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  const store = await openStore({
    databaseUrl: o.databaseUrl,
    dataDir: config.dataDir,
    pgSchema: o.pgSchema,
    poolSize: 2,
  }).catch((err) => {
    unlock();
    throw err;
  });
  const close = async () => {
    await store.close().catch(() => {});
    unlock();
  };
  await migrate(store).catch(async (err) => {
    await close();
    throw err;
  });
  return { store, close };
}

/** Copies the embedded store into PostgreSQL through an archive, then checks the counts there. */
export async function migrateCommand(config: Config, to: string, out: Out): Promise<void> {
  if (config.databaseUrl)
    throw new CliRefusal(
      'migrate copies the embedded store (PGlite) of the data dir: unset DATABASE_URL and name the target with --to',
    );
  if (!/^postgres(ql)?:\/\//.test(to)) throw new CliRefusal('--to: a postgres:// URL is required');
  const masterKey = findMasterKey({ dataDir: config.dataDir, configured: config.masterKey });
  if (!masterKey)
    throw new CliRefusal(`no master key in ${config.dataDir} (nor COHORT_MASTER_KEY): is this a cohort data dir?`);
  const dir = mkdtempSync(join(tmpdir(), 'cohort-migrate-'));
  const file = join(dir, 'store.tar.gz');
  try {
    await withStore(config, {}, (store) =>
      createBackup({
        store,
        provisioner: { ...provisionerFor(config), exportFiles: async () => ({ files: 0, bytes: 0, skipped: [] }) },
        masterKey,
        file,
      }),
    );
    const manifest = await restoreWith(config, file, { databaseUrl: to, internFiles: false });
    out(
      JSON.stringify(
        {
          migrated: summary({ manifest }),
          next: `start the gateway with DATABASE_URL=${redact(to)} and the same data dir and master key`,
        },
        null,
        2,
      ),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
