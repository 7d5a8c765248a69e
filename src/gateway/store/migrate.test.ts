// Migrations are idempotent on both stores, and several gateways starting together on one
// PostgreSQL apply them (and the bootstrap) exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { openStore } from './db.ts';
import { migrate } from './migrate.ts';
import { postgresUrl } from '../../../test/helpers/gateway.ts';
import { sharedStore } from '../../../test/helpers/cli.ts';

const FILES = readdirSync(fileURLToPath(new URL('./migrations/', import.meta.url)))
  .filter((f) => f.endsWith('.sql'))
  .sort();

test('migrations apply once on PGlite; a second run applies nothing', async () => {
  const store = await openStore({});
  try {
    assert.deepEqual(await migrate(store), FILES);
    assert.deepEqual(await migrate(store), []);
  } finally {
    await store.close();
  }
});

test('migrations apply once on PostgreSQL, also with two gateways starting together', {
  skip: !postgresUrl && 'DATABASE_URL is not set',
}, async () => {
  const shared = sharedStore('postgres');
  try {
    const gateways = await Promise.all([shared.gateway(), shared.gateway(), shared.gateway()]);
    try {
      assert.equal(gateways.filter((g) => g.bootstrap).length, 1, 'exactly one gateway bootstraps');
      const db = gateways[0]!.ctx.store.db;
      const count = async (table: string) => {
        const res = (await db.execute(sql.raw(`select count(*) as n from ${table}`))) as unknown as {
          rows: { n: string }[];
        };
        return Number(res.rows[0]!.n);
      };
      assert.deepEqual(
        [await count('schema_migrations'), await count('organizations'), await count('api_keys')],
        [FILES.length, 1, 2],
      );
      assert.deepEqual(await migrate(gateways[1]!.ctx.store), []);
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
    }
  } finally {
    await shared.cleanup();
  }
});
