// The store's rows in and out of a backup: every table as JSON lines, read from one snapshot, and
// inserted back in one transaction. The same SQL on PGlite and PostgreSQL (row_to_json and
// json_populate_recordset), so a PGlite backup restores into PostgreSQL and back.
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { Db, Store } from '../gateway/store/db.ts';
import { TABLES, type Table } from './manifest.ts';

const PAGE = 5_000;
const BATCH = 500;

/** Writes tables/<table>.jsonl for every table; returns the row counts and the migration level. */
export async function dumpTables(
  store: Store,
  dir: string,
): Promise<{ counts: Record<Table, number>; migration: string }> {
  mkdirSync(join(dir, 'tables'), { recursive: true });
  return store.snapshot(async (query) => {
    const present = (
      await query(
        `select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
      )
    ).map((r) => String(r.t));
    const unknown = present.filter((t) => t !== 'schema_migrations' && !(TABLES as readonly string[]).includes(t));
    // A table a migration added and the backup does not know would be lost silently.
    if (unknown.length) throw new Error(`the store has tables this backup does not know: ${unknown.join(', ')}`);
    const [level] = await query('select max(name) as m from schema_migrations');
    const counts = {} as Record<Table, number>;
    for (const table of TABLES) {
      const out = createWriteStream(join(dir, 'tables', `${table}.jsonl`), { mode: 0o600 });
      let n = 0;
      let after = '(0,0)';
      for (;;) {
        // Pages by physical row id: stable within the snapshot, without an ORDER BY on every table's key.
        const rows = await query(
          `select ctid::text as c, row_to_json(t)::text as j from ${table} t where ctid > '${after}'::tid order by ctid limit ${PAGE}`,
        );
        for (const r of rows) if (!out.write(`${r.j as string}\n`)) await once(out, 'drain');
        n += rows.length;
        if (rows.length < PAGE) break;
        after = String(rows.at(-1)!.c);
      }
      out.end();
      await once(out, 'finish');
      counts[table] = n;
    }
    return { counts, migration: String(level?.m ?? '') };
  });
}

/** Rows in each table of a store (to check it is empty before a restore, and counts after). */
export async function countRows(db: Db): Promise<Record<Table, number>> {
  const counts = {} as Record<Table, number>;
  for (const table of TABLES) {
    const res = (await db.execute(sql.raw(`select count(*)::int as n from ${table}`))) as unknown as {
      rows: { n: number }[];
    };
    counts[table] = Number(res.rows[0]!.n);
  }
  return counts;
}

async function* batches(file: string): AsyncGenerator<Record<string, unknown>[]> {
  let batch: Record<string, unknown>[] = [];
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (!line) continue;
    batch.push(JSON.parse(line) as Record<string, unknown>);
    if (batch.length === BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/** Inserts every table's rows in one transaction; columns the target lacks are refused, columns the archive lacks take their defaults. */
export async function loadTables(db: Db, dir: string): Promise<void> {
  await db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    for (const table of TABLES) {
      const res = (await tx.execute(
        sql`select column_name as c from information_schema.columns where table_schema = current_schema() and table_name = ${table}`,
      )) as unknown as { rows: { c: string }[] };
      const known = new Set(res.rows.map((r) => r.c));
      for await (const rows of batches(join(dir, 'tables', `${table}.jsonl`))) {
        const cols = Object.keys(rows[0]!);
        const missing = cols.filter((c) => !known.has(c));
        if (missing.length)
          throw new Error(`${table}: the archive has columns this store lacks (${missing.join(', ')})`);
        const list = sql.raw(cols.map((c) => `"${c}"`).join(', '));
        await tx.execute(
          sql`insert into ${sql.identifier(table)} (${list}) select ${list} from json_populate_recordset(null::${sql.identifier(table)}, ${JSON.stringify(rows)}::json)`,
        );
      }
    }
    // Interns come back at the next start: those that ran are provisioned again from their files.
    await tx.execute(
      sql`update interns set status = case when status in ('running', 'provisioning') then 'running' else status end, hostname = null, daemon_pid = null, progress = null, power = 'awake', power_at = null`,
    );
  });
}
