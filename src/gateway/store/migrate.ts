// Applies migrations/*.sql in name order, each once, under an advisory lock so that several
// gateways starting together on one PostgreSQL apply them exactly once.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Store } from './db.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

const migrationFiles = () =>
  readdirSync(DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort();

/** The newest migration this code knows (a backup from a newer one cannot be restored here). */
export const latestMigration = (): string => migrationFiles().at(-1)!;

export async function migrate(store: Store): Promise<string[]> {
  const files = migrationFiles();
  const applied: string[] = [];
  await store.lockedTransaction(async (exec) => {
    await exec(
      'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
    );
    const done = new Set((await exec('select name from schema_migrations')).map((r) => String(r.name)));
    for (const file of files.filter((f) => !done.has(f))) {
      await exec(readFileSync(DIR + file, 'utf8'));
      await exec(`insert into schema_migrations (name) values ('${file.replace(/'/g, "''")}')`);
      applied.push(file);
    }
  });
  return applied;
}
