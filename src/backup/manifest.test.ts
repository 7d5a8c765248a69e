import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { openStore } from '../gateway/store/db.ts';
import { migrate } from '../gateway/store/migrate.ts';
import { FORMAT, FORMAT_VERSION, TABLES, fingerprint, refusal, type Manifest } from './manifest.ts';

test('the backup knows every table the migrations create (a new table must be added to TABLES)', async () => {
  const store = await openStore({});
  try {
    await migrate(store);
    const tables = await store.snapshot((q) =>
      q(
        `select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`,
      ),
    );
    assert.deepEqual(
      tables.map((r) => r.t).filter((t) => t !== 'schema_migrations'),
      [...TABLES].sort(),
    );
  } finally {
    await store.close();
  }
});

const key = randomBytes(32);
const m: Manifest = {
  format: FORMAT,
  format_version: FORMAT_VERSION,
  created_at: '2026-11-25T00:00:00.000Z',
  cohort_version: '0.1.0',
  migration: '0005_intern_key_scope.sql',
  source: 'pglite',
  master_key_fingerprint: fingerprint(key),
  counts: {},
  interns: {},
  checksums: {},
};
for (const [name, manifest, target, why] of [
  ['the same level and key', m, { latestMigration: '0005_intern_key_scope.sql', masterKey: key }, null],
  ['an older level (migrations apply after)', m, { latestMigration: '0009_later.sql', masterKey: key }, null],
  [
    'a newer level',
    m,
    { latestMigration: '0004_intern_cursor.sql', masterKey: key },
    /^the backup was made by a newer cohort/,
  ],
  [
    'a newer format',
    { ...m, format_version: FORMAT_VERSION + 1 },
    { latestMigration: '0005_intern_key_scope.sql', masterKey: key },
    /format \(version 3\) is newer than this cohort reads \(2\)/,
  ],
  [
    'no key',
    m,
    { latestMigration: '0005_intern_key_scope.sql', masterKey: null },
    /sealed under the master key sha256:/,
  ],
  ['another key', m, { latestMigration: '0005_intern_key_scope.sql', masterKey: randomBytes(32) }, /^wrong master key/],
] as const) {
  test(`restore check: ${name}`, () => {
    const got = refusal(manifest, target);
    if (why === null) assert.equal(got, null);
    else assert.match(got ?? '', why);
  });
}

test('a fingerprint names a key without revealing it, and differs between keys', () => {
  assert.match(fingerprint(key), /^sha256:[0-9a-f]{32}$/);
  assert.equal(fingerprint(key).includes(key.toString('hex').slice(0, 8)), false);
  assert.notEqual(fingerprint(key), fingerprint(randomBytes(32)));
});
