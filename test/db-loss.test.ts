// What a gateway does when it loses its database. On PostgreSQL, a connection that dies (its
// backend terminated, the network cut) is said in a warn line and replaced at the next query,
// while the process keeps serving. On PGlite, the database thread's end (made real through the
// inspector: test/helpers/crash-thread.ts) is said in one fatal line by `npm start`'s process, which
// exits 1 for its supervisor to restart it; a gateway started in-process only logs it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import { loadConfig } from '../src/gateway/config.ts';
import { createLogger } from '../src/shared/log.ts';
import { startGateway } from '../src/gateway/server.ts';
import { crashDatabaseThread } from './helpers/crash-thread.ts';
import { freePort, startGatewayProcess, type GatewayProcess } from './helpers/gateway-process.ts';
import { waitFor } from './helpers/wait.ts';

const postgresUrl = process.env.DATABASE_URL;

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Line = { level: number; msg: string; [k: string]: unknown };

/** What the process writes from now on: its raw text, and its JSON log lines. */
function output(child: ChildProcess) {
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d));
  child.stderr!.on('data', (d: Buffer) => (text += d));
  return {
    text: () => text,
    lines: () => text.split('\n').flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Line] : [])),
  };
}

/** `get`'s value once `done` holds of it (waitFor: a condition, not a time). */
async function eventually<T>(get: () => T | Promise<T>, done: (v: T) => boolean): Promise<T> {
  let v!: T;
  await waitFor('the gateway reached the state the test waits for', async () => done((v = await get())));
  return v;
}

/** A TCP relay to PostgreSQL that the test can cut, as a network drop would, and restore. */
async function startRelay(target: { host: string; port: number }) {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let up = true;
  const server = createServer((client) => {
    if (!up) return void client.resetAndDestroy();
    const pair = { client, upstream: connect(target.port, target.host) };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      pair.client.destroy();
      pair.upstream.destroy();
    };
    for (const s of [pair.client, pair.upstream]) s.on('error', end).on('close', end);
    pair.client.pipe(pair.upstream).pipe(pair.client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    /** The relay's own ports towards PostgreSQL: `client_port` of the gateway's backends. */
    upstreamPorts: () => [...pairs].map((p) => p.upstream.localPort),
    /** Resets every connection and refuses new ones; returns how many it cut. */
    cut() {
      up = false;
      const n = pairs.size;
      for (const p of [...pairs]) {
        p.client.resetAndDestroy();
        p.upstream.destroy();
      }
      return n;
    },
    restore: () => (up = true),
    close: () => new Promise((r) => server.close(r)),
  };
}

const LOST_CONNECTION = 'lost a PostgreSQL connection; the next query opens a new one';

test('PostgreSQL: a connection that dies is logged once and replaced, and the gateway keeps serving', {
  skip: postgresUrl ? false : 'DATABASE_URL is not set',
}, async () => {
  const target = new URL(postgresUrl!);
  const relay = await startRelay({ host: target.hostname, port: Number(target.port || 5432) });
  // The test server trusts local connections, so it ignores the password; no line may show it.
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const url = new URL(postgresUrl!);
  url.host = `127.0.0.1:${relay.port}`;
  url.username ||= 'postgres';
  url.password = password;
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-dbloss-pg-'));
  dirs.push(dataDir);
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  let gw: GatewayProcess | undefined;
  try {
    gw = await startGatewayProcess({
      dataDir,
      port: await freePort(),
      env: { DATABASE_URL: url.href, COHORT_PG_SCHEMA: schema },
    });
    const out = output(gw.child);
    const key = gw.keys().management_key;
    const workspaces = async () => {
      const res = await fetch(`${gw!.url}/workspaces`, { headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, body: await res.json() };
    };
    const lostLines = () => out.lines().filter((l) => l.msg === LOST_CONNECTION);
    const alive = () => gw!.child.exitCode === null && gw!.child.signalCode === null;
    assert.equal((await workspaces()).status, 200);

    // An operator terminates the gateway's backends (found by the relay's ports, so only this gateway's).
    const killed = (
      await admin.query<{ application_name: string; terminated: boolean }>(
        'select application_name, pg_terminate_backend(pid) as terminated from pg_stat_activity where client_port = any($1::int[])',
        [relay.upstreamPorts()],
      )
    ).rows;
    assert.ok(killed.length >= 1);
    assert.deepEqual(
      killed,
      killed.map(() => ({ application_name: 'cohort', terminated: true })),
    );
    assert.equal((await eventually(lostLines, (l) => l.length >= killed.length)).length, killed.length);
    assert.ok(alive());
    const again = await eventually(workspaces, (r) => r.status === 200);
    assert.equal(again.status, 200);
    assert.equal(again.body.total_count, 1);

    // The network is cut: a request meanwhile gets the plain 500, and the next one after it is back succeeds.
    const cut = relay.cut();
    assert.ok(cut >= 1);
    const during = await workspaces();
    assert.deepEqual(during, { status: 500, body: { error: { code: 500, message: 'internal server error' } } });
    relay.restore();
    assert.equal((await eventually(workspaces, (r) => r.status === 200)).status, 200);
    assert.ok(alive());

    const lost = await eventually(lostLines, (l) => l.length >= killed.length + cut);
    assert.equal(lost.length, killed.length + cut);
    assert.deepEqual(
      lost.map((l) => [l.level, l.code]),
      [...killed.map(() => [40, '57P01']), ...Array.from({ length: cut }, () => [40, 'ECONNRESET'])],
    );
    assert.equal(lost[0]!.reason, 'terminating connection due to administrator command');
    assert.ok(!out.text().includes(password) && !out.text().includes('postgres://'), out.text());
    await gw.kill('SIGTERM');
    assert.equal(gw.child.exitCode, 0);
  } finally {
    await gw?.kill();
    await relay.close();
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  }
});

const CRASHED = 'the database thread exited (code 1): injected crash';

test('PGlite: `npm start` says the database thread ended in one fatal line and exits 1', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-dbloss-pglite-'));
  dirs.push(dataDir);
  const inspectPort = await freePort();
  const gw = await startGatewayProcess({
    dataDir,
    port: await freePort(),
    nodeArgs: [`--inspect=127.0.0.1:${inspectPort}`],
  });
  try {
    const out = output(gw.child);
    const closed = once(gw.child, 'close');
    const res = await fetch(`${gw.url}/workspaces`, {
      headers: { authorization: `Bearer ${gw.keys().management_key}` },
    });
    assert.equal(res.status, 200);
    await crashDatabaseThread({ dir: join(dataDir, 'pglite'), inspectPort });
    const stillRunning = new Promise((r) => setTimeout(r, 10_000, 'still running after 10 s').unref());
    assert.deepEqual(await Promise.race([closed, stillRunning]), [1, null]);
    assert.deepEqual(
      out
        .lines()
        .filter((l) => l.level >= 40)
        .map((l) => [l.level, l.msg, l.reason]),
      [[60, 'lost the database, exiting so a supervisor can restart the gateway', CRASHED]],
    );
  } finally {
    await gw.kill();
  }
});

test('PGlite: a gateway started in-process logs the loss at error level and keeps answering, 500 where the store is needed', async () => {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  const config = loadConfig({
    PORT: '0',
    COHORT_DATA_DIR: mkdtempSync(join(tmpdir(), 'cohort-dbloss-inproc-')),
    LOG_LEVEL: 'warn',
  });
  dirs.push(config.dataDir);
  const gw = await startGateway({ config, log: createLogger({ level: 'warn', destination: sink }), store: {} });
  try {
    const workspaces = async () => {
      const res = await fetch(`${gw.url}/workspaces`, {
        headers: { authorization: `Bearer ${gw.bootstrap!.management_key}` },
      });
      return { status: res.status, body: await res.json() };
    };
    assert.equal((await workspaces()).status, 200);
    await crashDatabaseThread({});
    const lost = await eventually(
      () => lines.filter((l) => l.level >= 50),
      (l) => l.length >= 1,
    );
    assert.deepEqual(
      lost.map((l) => [l.level, l.msg, l.reason]),
      [[50, 'lost the database; requests that need it fail until the gateway is restarted', CRASHED]],
    );
    assert.deepEqual(await workspaces(), {
      status: 500,
      body: { error: { code: 500, message: 'internal server error' } },
    });
    assert.equal((await fetch(`${gw.url}/openapi.json`)).status, 200);
  } finally {
    await gw.close();
  }
  assert.equal(lines.filter((l) => l.msg.startsWith('lost the database')).length, 1);
});
