// A raw provider key appears nowhere after create: not in any response, not in the log output,
// not in the PGlite files on disk (nor, on PostgreSQL, in any stored row).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { loadConfig } from '../config.ts';
import { createLogger } from '../../shared/log.ts';
import { startGateway, type Gateway } from '../server.ts';
import { postgresUrl } from '../../../test/helpers/gateway.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}
const containing = (files: string[], needle: string) =>
  files.filter((f) => readFileSync(f).includes(Buffer.from(needle)));

describe('provider key secrecy', () => {
  const raw = `sk-live-${randomBytes(24).toString('hex')}`;
  const rotated = `sk-rotated-${randomBytes(24).toString('hex')}`;
  const marker = `visible-name-${randomBytes(6).toString('hex')}`;
  const logs: string[] = [];
  const bodies: string[] = [];
  let dataDir: string;
  let gw: Gateway;

  async function call(method: string, path: string, body?: unknown) {
    const res = await fetch(gw.url + path, {
      method,
      headers: {
        authorization: `Bearer ${gw.bootstrap!.management_key}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    bodies.push(text);
    return { status: res.status, body: JSON.parse(text) };
  }

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cohort-secrecy-'));
    const sink = new Writable({ write: (chunk, _enc, cb) => (logs.push(String(chunk)), cb()) });
    const config = loadConfig({ PORT: '0', COHORT_DATA_DIR: dataDir, LOG_LEVEL: 'trace' });
    gw = await startGateway({ config, log: createLogger({ level: 'trace', destination: sink }), store: { dataDir } });
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('create, read, update and refusals never echo the key; the files and logs hold none of it', async () => {
    const created = await call('POST', '/byok', { key: raw, provider: 'openai', name: marker });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    assert.equal((await call('GET', `/byok/${id}`)).status, 200);
    assert.equal((await call('GET', '/byok')).status, 200);
    assert.equal((await call('PATCH', `/byok/${id}`, { key: rotated })).status, 200);
    assert.equal((await call('POST', '/byok', { key: raw, provider: 'not-a-provider' })).status, 400);
    assert.equal((await call('POST', '/byok', { key: raw, provider: 'openai', surprise: raw })).status, 400);
    assert.equal((await call('PATCH', `/byok/${id}`, { key: raw, is_byok_only: 'yes' })).status, 400);
    await gw.close();

    for (const secret of [raw, rotated]) {
      assert.deepEqual(
        bodies.filter((b) => b.includes(secret)),
        [],
        'a response carried the key',
      );
      assert.deepEqual(
        logs.filter((l) => l.includes(secret)),
        [],
        'a log line carried the key',
      );
    }
    assert.ok(logs.length > 0, 'the log capture saw the requests');
    const files = filesUnder(dataDir);
    assert.ok(
      containing(files, marker).length > 0,
      'the credential name reached the files, so the search is meaningful',
    );
    assert.deepEqual(containing(files, raw), []);
    assert.deepEqual(containing(files, rotated), []);
    assert.deepEqual(containing(files, raw.slice(8, 40)), [], 'no fragment of the key either');
  });
});

describe('provider key secrecy (postgres rows)', { skip: postgresUrl ? false : 'DATABASE_URL is not set' }, () => {
  test('no stored row of any table contains the key', async () => {
    const raw = `sk-pg-${randomBytes(24).toString('hex')}`;
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'cohort-secrecy-pg-'));
    const gw = await startGateway({
      config: loadConfig({ PORT: '0', COHORT_DATA_DIR: dataDir, LOG_LEVEL: 'silent' }),
      store: { databaseUrl: postgresUrl, pgSchema: schema, poolSize: 2 },
    });
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      const res = await fetch(gw.url + '/byok', {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.bootstrap!.management_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key: raw, provider: 'openai' }),
      });
      assert.equal(res.status, 201);
      const tables = await client.query(`select table_name from information_schema.tables where table_schema = $1`, [
        schema,
      ]);
      assert.ok(tables.rows.length >= 4);
      for (const { table_name } of tables.rows) {
        const hits = await client.query(
          `select count(*)::int as n from ${schema}.${table_name} t where t::text like $1`,
          [`%${raw.slice(6, 40)}%`],
        );
        assert.equal(hits.rows[0].n, 0, table_name);
      }
    } finally {
      await gw.close();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
