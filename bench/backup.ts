// npm run bench:backup — backup and restore time and archive size for an install of 10,000
// request-log rows, 1,000 keys and 100 interns (each with a session file and a work file), on
// PGlite and on PostgreSQL (when DATABASE_URL is set), each restored into an empty store of its
// kind. Median of BENCH_ROUNDS (3) runs. Prints a markdown table. With BENCH_BASELINE=<commit>,
// that commit's backup and restore run beside this build's, round by round (bench/baseline.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { openStore, type Store } from '../src/gateway/store/db.ts';
import { migrate } from '../src/gateway/store/migrate.ts';
import { seedIfEmpty } from '../src/gateway/access/bootstrap.ts';
import * as backupHere from '../src/backup/index.ts';
import * as provisionerHere from '../src/gateway/interns/provisioner/index.ts';
import * as configHere from '../src/gateway/config.ts';
import { baselineCheckout } from './baseline.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pgUrl = process.env.DATABASE_URL;

async function fill(store: Store, dataDir: string): Promise<void> {
  await migrate(store);
  const boot = (await seedIfEmpty(store.db))!;
  const exec = (sql: string) => store.lockedTransaction(async (run) => void (await run(sql)));
  await exec(`insert into api_keys (id, org_id, hash, label, name, kind, acts_as, creator_user_id, workspace_id)
    select gen_random_uuid(), '${boot.org_id}', md5(i::text) || md5((i + 1)::text), 'sk-…' || i, 'key ' || i, 'standard', 'user', '${boot.user_id}', '${boot.workspace_id}' from generate_series(1, 998) i`);
  await exec(`insert into inference_requests (id, org_id, workspace_id, api_style, requested_model, model, provider, streamed, status, latency_ms, prompt_tokens, completion_tokens, total_tokens, cost, request_body, response_body)
    select 'gen-' || i, '${boot.org_id}', '${boot.workspace_id}', 'chat', 'local/scripted', 'local/scripted', 'local', i % 2 = 0, 200, 12, 40, 20, 60, 0.00006,
      '{"messages": [{"role": "user", "content": "hello there, a request body of a usual size"}]}'::jsonb, '{"role": "assistant", "content": "an answer"}'::jsonb
    from generate_series(1, 10000) i`);
  const ids = Array.from({ length: 100 }, () => randomUUID());
  await exec(
    `insert into interns (id, org_id, workspace_id, creator_user_id, name, status) values ${ids.map((id, i) => `('${id}', '${boot.org_id}', '${boot.workspace_id}', '${boot.user_id}', 'intern ${i}', 'stopped')`).join(', ')}`,
  );
  for (const id of ids) {
    const disk = join(dataDir, 'interns', id, 'disk');
    mkdirSync(join(disk, 'agent', 'sessions'), { recursive: true });
    mkdirSync(join(disk, 'work'), { recursive: true });
    writeFileSync(
      join(disk, 'agent', 'sessions', 's1.json'),
      JSON.stringify({
        messages: Array.from({ length: 20 }, (_, i) => ({
          role: i % 2 ? 'assistant' : 'user',
          content: `message ${i} `.repeat(20),
        })),
      }),
    );
    writeFileSync(join(disk, 'work', 'notes.md'), randomBytes(4096).toString('base64'));
  }
}

/** A build's backup, restore and provisioner: this one's, or (BENCH_BASELINE) an earlier commit's. */
type Build = {
  name: string;
  backup: typeof backupHere;
  provisioner: typeof provisionerHere;
  config: typeof configHere;
};
const builds: Build[] = [{ name: 'this build', backup: backupHere, provisioner: provisionerHere, config: configHere }];
if (process.env.BENCH_BASELINE) {
  const root = baselineCheckout(process.env.BENCH_BASELINE, { build: false });
  const from = (p: string) => import(join(root, p));
  builds.push({
    name: process.env.BENCH_BASELINE,
    backup: await from('src/backup/index.ts'),
    provisioner: await from('src/gateway/interns/provisioner/index.ts'),
    config: await from('src/gateway/config.ts'),
  });
}

type Kind = { name: string; open(dir: string, schema: string): Promise<Store>; drop(schema: string): Promise<void> };

const kinds: Kind[] = [
  { name: 'PGlite', open: (dir) => openStore({ dataDir: dir }), drop: async () => {} },
  ...(pgUrl
    ? [
        {
          name: 'PostgreSQL',
          open: (_dir: string, schema: string) => openStore({ databaseUrl: pgUrl, pgSchema: schema, poolSize: 2 }),
          drop: async (schema: string) => {
            const c = new pg.Client({ connectionString: pgUrl });
            await c.connect();
            await c.query(`drop schema if exists ${schema} cascade`);
            await c.end();
          },
        },
      ]
    : []),
];
if (!pgUrl) console.log('PostgreSQL skipped: DATABASE_URL is not set');

console.log(
  `\n10,000 request-log rows, 1,000 keys, 100 interns (2 files each); median of ${ROUNDS}; ${new Date().toISOString().slice(0, 10)}\n`,
);
console.log('| store | build | backup (ms) | archive (KiB) | restore (ms) |');
console.log('|---|---|---|---|---|');
for (const kind of kinds) {
  const runs = new Map(
    builds.map((b) => [b, { backups: [] as number[], restores: [] as number[], sizes: [] as number[] }]),
  );
  for (let r = 0; r < ROUNDS; r++) {
    for (const build of builds) {
      const m = runs.get(build)!;
      const srcDir = mkdtempSync(join(tmpdir(), 'cohort-bench-src-'));
      const dstDir = mkdtempSync(join(tmpdir(), 'cohort-bench-dst-'));
      const [srcSchema, dstSchema] = [`b_${randomBytes(5).toString('hex')}`, `b_${randomBytes(5).toString('hex')}`];
      // Plain directories: the intern files' copy is measured, not mounting images.
      const config = build.config.loadConfig({ COHORT_DATA_DIR: srcDir, COHORT_INTERN_DISK_MB: '0' });
      const masterKey = randomBytes(32);
      try {
        const store = await kind.open(srcDir, srcSchema);
        await fill(store, srcDir);
        const file = join(srcDir, 'backup.tar.gz');
        const t0 = performance.now();
        const made = await build.backup.createBackup({
          store,
          provisioner: build.provisioner.createLocalProvisioner({ dataDir: srcDir, isolation: config.isolation }),
          masterKey,
          file,
        });
        m.backups.push(performance.now() - t0);
        m.sizes.push(made.bytes / 1024);
        await store.close();
        let target: Store | undefined;
        const t1 = performance.now();
        await build.backup.restoreBackup(file, {
          masterKey,
          dataDir: dstDir,
          internFiles: true,
          open: async () => {
            target = await kind.open(dstDir, dstSchema);
            await migrate(target);
            return {
              store: target,
              provisioner: build.provisioner.createLocalProvisioner({ dataDir: dstDir, isolation: config.isolation }),
            };
          },
        });
        m.restores.push(performance.now() - t1);
        await target?.close();
      } finally {
        await kind.drop(srcSchema);
        await kind.drop(dstSchema);
        rmSync(srcDir, { recursive: true, force: true });
        rmSync(dstDir, { recursive: true, force: true });
      }
    }
  }
  for (const [build, m] of runs)
    console.log(
      `| ${kind.name} | ${build.name} | ${median(m.backups).toFixed(0)} | ${median(m.sizes).toFixed(0)} | ${median(m.restores).toFixed(0)} |`,
    );
}
