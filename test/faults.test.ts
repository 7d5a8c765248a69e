// Faults without loss (docs/failure-modes.md), each against real processes: gateways killed with
// SIGKILL, PostgreSQL connections terminated by an operator, a Redis of the test's own frozen with
// SIGSTOP, and a PGlite data dir on a small tmpfs filled to the last byte.
// - a provision whose gateway died is taken over by the other gateway, and POST …/provision on it
//   starts it there;
// - every generation served across two connection cuts, or while the disk is full, is in the
//   request log afterwards, once; readiness says when the store cannot write;
// - requests while Redis is frozen are answered within 3 s, and the CLI gives up with a message;
// - a crashed gateway's concurrency slots free its key on the other gateway within 15 s, and the
//   429s meanwhile say why and when.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, gatewayProcesses, type GatewayProcess } from './helpers/gateway-process.ts';
import { callProcess, parseSse, runningInternOn } from './helpers/interns.ts';
import { text, user } from './helpers/chat.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { redisServerMissing, startOwnRedis, type OwnRedis } from './helpers/redis-server.ts';
import { sharedStore } from './helpers/cli.ts';
import { openStore } from '../src/gateway/store/db.ts';
import { inferenceRequests } from '../src/gateway/store/schema-inference.ts';
import { waitFor, waitForValue } from './helpers/wait.ts';

const postgresUrl = process.env.DATABASE_URL;
const noPostgres = postgresUrl ? false : 'DATABASE_URL is not set';
/** Isolated interns where this host can run them, as an operator's would be. */
const isolation: Record<string, string> = noSandbox ? { COHORT_UNSAFE_NO_ISOLATION: '1' } : {};
if (redisServerMissing) process.stderr.write(`# frozen-Redis and slot tests skipped: ${redisServerMissing}\n`);

type Line = { level: number; msg: string; [k: string]: unknown };
/** The JSON log lines a gateway process writes from now on. */
function logOf(child: ChildProcess): () => Line[] {
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d));
  return () => text.split('\n').flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Line] : []));
}

/** A PostgreSQL schema for the test's gateways, its connections named so that cuts end only theirs. */
function pgStore() {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const url = new URL(postgresUrl ?? 'postgres://unset');
  url.searchParams.set('application_name', `cohort-${schema}`);
  return {
    schema,
    appName: `cohort-${schema}`,
    env: { DATABASE_URL: url.href, COHORT_PG_SCHEMA: schema },
    async drop() {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    },
  };
}

/** A model request through a gateway process: its status and, when served, its generation id. */
async function generate(gw: GatewayProcess, o: { stream: boolean; content?: string; key?: string }) {
  const res = await fetch(`${gw.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.key ?? gw.keys().api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'local/scripted',
      stream: o.stream,
      messages: [{ role: 'user', content: o.content ?? '/say hello' }],
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.text();
  if (res.status !== 200) return { status: res.status, id: null, body, headers: res.headers };
  if (!o.stream) return { status: 200, id: JSON.parse(body).id as string, body, headers: res.headers };
  const { chunks, done } = parseSse(body);
  assert.equal(done, true);
  return { status: 200, id: chunks[0].id as string, body, headers: res.headers };
}

/** The roots of the process trees naming the intern's directory (a launcher, its sandbox and its
 * daemon below it): one per start of its daemon still running. */
function launchersOf(dataDir: string, id: string): number[] {
  const dir = join(dataDir, 'interns', id);
  const named = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir)) continue;
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      named.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  return [...named].filter(([, parent]) => !named.has(parent)).map(([pid]) => pid);
}

describe('provisioning survives its gateway', { skip: noPostgres }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  const store = pgStore();
  let g1: GatewayProcess;
  let g2: GatewayProcess;
  let log2: () => Line[];
  let admin: pg.Client;
  before(async () => {
    const dataDir = pool.dataDir();
    const env = { ...store.env, ...isolation, COHORT_GATEWAY_LEASE_MS: '3000' };
    g1 = await pool.start({ dataDir, port: await freePort(), env });
    g2 = await pool.start({ dataDir, port: await freePort(), env });
    log2 = logOf(g2.child);
    admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
  });
  after(async () => {
    await admin.end();
    await pool.cleanup();
    await store.drop();
  });
  const tookOver = (id: string) =>
    log2().filter((l) => l.msg === 'took over the provisioning of an intern whose gateway stopped' && l.intern === id);

  test('the gateway that accepted POST /interns {"provision": true} is killed right after answering: the intern runs within 30 s, started by the other one', async () => {
    const created = await callProcess(g1, 'POST', '/interns', { name: 'orphan', provision: true });
    await g1.kill('SIGKILL');
    assert.equal(created.status, 201);
    assert.equal(created.body.status, 'provisioning');
    const id = created.body.id as string;
    const started = Date.now();
    const rec = await waitForValue(
      'the intern runs or failed',
      async () => (await callProcess(g2, 'GET', `/interns/${id}`)).body,
      (r) => r.status === 'running' || r.status === 'failed',
      { timeoutMs: 30_000 },
    );
    assert.ok(Date.now() - started <= 30_000);
    assert.deepEqual([rec.status, rec.progress, rec.last_failure_message], ['running', null, null]);
    const turn = await callProcess(
      g2,
      'POST',
      `/interns/${id}/chat/completions`,
      user('/say taken over'),
      g2.keys().api_key,
    );
    assert.deepEqual([turn.status, text(turn)], [200, 'taken over']);
    assert.equal(tookOver(id).length, 1);
    // Whatever the killed gateway had started for it was stopped: one daemon runs.
    assert.equal(launchersOf(g2.dataDir, id).length, 1);
  });

  test('a gateway killed while the daemon it started comes up: the other stops that daemon and starts the intern again, one daemon in the end', async () => {
    const g3 = await pool.start({
      dataDir: g2.dataDir,
      port: await freePort(),
      env: { ...store.env, ...isolation, COHORT_GATEWAY_LEASE_MS: '3000' },
    });
    const id = (await callProcess(g3, 'POST', '/interns', { name: 'half-started', provision: true })).body.id as string;
    // Its launcher is recorded on disk before the daemon is waited for.
    const recorded = await waitFor('the launcher is recorded', () => {
      try {
        return Number(readFileSync(join(g3.dataDir, 'interns', id, 'launcher.pid'), 'utf8'));
      } catch {
        return 0;
      }
    });
    await g3.kill('SIGKILL');
    assert.deepEqual(launchersOf(g3.dataDir, id), [recorded]);
    const rec = await waitForValue(
      'the intern runs or failed',
      async () => (await callProcess(g2, 'GET', `/interns/${id}`)).body,
      (r) => r.status === 'running' || r.status === 'failed',
      { timeoutMs: 30_000 },
    );
    assert.deepEqual([rec.status, rec.last_failure_message], ['running', null]);
    assert.equal(tookOver(id).length, 1);
    const now = launchersOf(g3.dataDir, id);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], recorded);
  });

  test('POST …/provision on an intern whose provisioning gateway is dead starts it; on one whose gateway lives, it changes nothing', async () => {
    const dead = (await callProcess(g2, 'POST', '/interns', { name: 'stranded' })).body.id as string;
    const live = (await callProcess(g2, 'POST', '/interns', { name: 'in-hand' })).body.id as string;
    const step = JSON.stringify({ step_label: 'starting the daemon', step_number: 2, total_steps: 3 });
    const strand = (id: string, owner: string, until: string) =>
      admin.query(
        `update ${store.schema}.interns set status = 'provisioning', progress = $2::jsonb, lease_owner = $3, lease_until = now() + $4::interval where id = $1`,
        [id, step, owner, until],
      );
    await strand(dead, 'a-gateway-that-died', '-1 second');
    await strand(live, 'a-gateway-that-lives', '1 hour');
    for (const id of [dead, live]) {
      const r = await callProcess(g2, 'POST', `/interns/${id}/provision`);
      assert.deepEqual([r.status, r.body], [202, { provisioning: true }]);
    }
    const rec = await waitForValue(
      'the stranded intern runs or failed',
      async () => (await callProcess(g2, 'GET', `/interns/${dead}`)).body,
      (r) => r.status === 'running' || r.status === 'failed',
      { timeoutMs: 30_000 },
    );
    assert.deepEqual([rec.status, rec.last_failure_message], ['running', null]);
    assert.equal(tookOver(dead).length, 1);
    assert.equal(tookOver(dead)[0]!.from, 'a-gateway-that-died');
    const held = (
      await admin.query(`select status, progress, lease_owner from ${store.schema}.interns where id = $1`, [live])
    ).rows[0];
    assert.deepEqual(held, { status: 'provisioning', progress: JSON.parse(step), lease_owner: 'a-gateway-that-lives' });
    assert.deepEqual(tookOver(live), []);
  });
});

describe('a wake whose gateway died', { skip: noPostgres }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  const store = pgStore();
  after(async () => {
    await pool.cleanup();
    await store.drop();
  });

  test('a chat to an intern left "waking" by a dead gateway is served within seconds, not after the minute a move takes to go stale', async () => {
    const env = { ...store.env, ...isolation, COHORT_GATEWAY_LEASE_MS: '3000' };
    const gw = await pool.start({ dataDir: pool.dataDir(), port: await freePort(), env });
    const id = (await runningInternOn(gw, 'sleepy')).id as string;
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      // The record as a gateway leaves it when it dies half-way through a wake.
      await admin.query(
        `update ${store.schema}.interns set power = 'waking', power_at = date_trunc('milliseconds', now()), hostname = null, lease_owner = 'a-gateway-that-died', lease_until = now() - interval '1 second' where id = $1`,
        [id],
      );
      // The chat waits, as any chat to a waking intern does, until the lapsed lease is taken over.
      const res = await fetch(`${gw.url}/interns/${id}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.keys().api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(user('/say awake again')),
        signal: AbortSignal.timeout(15_000),
      });
      assert.equal(res.status, 200);
      assert.equal(text(parseSse(await res.text())), 'awake again');
      const rec = (
        await admin.query(`select power, lease_owner, lease_until from ${store.schema}.interns where id = $1`, [id])
      ).rows[0];
      assert.deepEqual(rec, { power: 'awake', lease_owner: null, lease_until: null });
      assert.equal(launchersOf(gw.dataDir, id).length, 1);
    } finally {
      await admin.end();
    }
  });
});

describe('no usage record lost: two connection cuts (PostgreSQL)', { skip: noPostgres }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  const store = pgStore();
  after(async () => {
    await pool.cleanup();
    await store.drop();
  });

  test('every generation served while an operator terminates the gateway’s backends twice is in the request log once', async () => {
    const gw = await pool.start({ dataDir: pool.dataDir(), port: await freePort(), env: store.env });
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      const backends = async () =>
        (await admin.query('select pid from pg_stat_activity where application_name = $1', [store.appName])).rowCount ??
        0;
      // An operator's pg_terminate_backend of every connection the gateway holds, once it holds one.
      const cut = async () => {
        await waitFor('the gateway holds a connection', backends, { timeoutMs: 5_000 });
        const ended = await admin.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1',
          [store.appName],
        );
        return ended.rowCount ?? 0;
      };
      const served: string[] = [];
      const statuses = new Map<number, number>();
      let done = 0;
      const cuts: number[] = [];
      const worker = async (w: number) => {
        for (let i = w; i < 240; i += 4) {
          const r = await generate(gw, { stream: i % 2 === 0 });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.id) served.push(r.id);
          done++;
          if (done === 80 || done === 160) cuts.push(await cut());
        }
      };
      await Promise.all([0, 1, 2, 3].map(worker));
      assert.equal(cuts.length, 2);
      assert.ok(
        cuts.every((n) => n >= 1),
        `backends ended per cut: ${cuts}`,
      );
      // Served or refused by the documented 500 of a lost connection; never anything else.
      assert.deepEqual(
        [...statuses.keys()].filter((s) => s !== 200 && s !== 500),
        [],
      );
      assert.ok(served.length >= 200, `served ${served.length} of 240`);
      const logged = async () =>
        (
          await admin.query(`select id from ${store.schema}.inference_requests where id = any($1::text[])`, [served])
        ).rows.map((r) => r.id as string);
      const found = await waitForValue(
        'every served generation is logged',
        logged,
        (ids) => ids.length === served.length,
      );
      assert.equal(found.length, served.length);
      assert.deepEqual(new Set(found), new Set(served));
      const metrics = await (await fetch(gw.url.replace('/api/v1', '/metrics'))).text();
      assert.doesNotMatch(metrics, /^cohort_request_log_lost_rows_total\{/m);
    } finally {
      await admin.end();
    }
  });
});

/** A TCP relay to PostgreSQL that can hang as a frozen server or a half-open network does:
 * connections stay open (new ones are accepted) and no byte is passed until it thaws. */
async function hangingRelay(target: { host: string; port: number }) {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const pass = (from: Socket, to: Socket) =>
    from.on('data', (d: Buffer) => (frozen ? held.push(() => to.write(d)) : to.write(d)));
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {}).on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    pass(client, upstream);
    pass(upstream, client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => (frozen = true),
    thaw() {
      frozen = false;
      for (const f of held.splice(0)) f();
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

describe('a hung PostgreSQL', { skip: noPostgres }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  const store = pgStore();
  after(async () => {
    await pool.cleanup();
    await store.drop();
  });

  test('queries give up after COHORT_DB_TIMEOUT_MS: a request that needs the store is a 500, /ready is 503, a served generation is logged once PostgreSQL answers, and the CLI gives up', async () => {
    const target = new URL(postgresUrl!);
    const relay = await hangingRelay({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(store.env.DATABASE_URL);
    url.host = `127.0.0.1:${relay.port}`;
    const env = {
      DATABASE_URL: url.href,
      COHORT_PG_SCHEMA: store.schema,
      COHORT_DB_TIMEOUT_MS: '1500',
      COHORT_ROUTING_CACHE_MS: '60000',
    };
    const gw = await pool.start({ dataDir: pool.dataDir(), port: await freePort(), env });
    const root = gw.url.replace('/api/v1', '');
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      // The key and the workspace's routing are cached by this request.
      assert.equal((await generate(gw, { stream: false })).status, 200);
      relay.freeze();
      let served: string;
      let cli: Awaited<ReturnType<ReturnType<typeof sharedStore>['cli']>>;
      try {
        const during = await generate(gw, { stream: true, content: '/say from the caches' });
        assert.equal(during.status, 200);
        served = during.id!;
        const list = await fetch(`${gw.url}/workspaces`, {
          headers: { authorization: `Bearer ${gw.keys().management_key}` },
          signal: AbortSignal.timeout(5_000),
        });
        assert.deepEqual(
          [list.status, await list.json()],
          [500, { error: { code: 500, message: 'internal server error' } }],
        );
        const ready = await fetch(`${root}/ready`, { signal: AbortSignal.timeout(5_000) });
        const body = (await ready.json()) as { status: string; checks: Record<string, string> };
        assert.deepEqual([ready.status, body.status, body.checks.redis], [503, 'unavailable', 'not configured']);
        // The bound passed, or pg ended the connection it passed on first.
        assert.match(body.checks.store!, /^failed: (no answer within 1500 ms|Connection terminated unexpectedly)$/);
        const other = sharedStore('postgres');
        cli = await other.cli(['key', 'list'], {
          DATABASE_URL: url.href,
          COHORT_PG_SCHEMA: store.schema,
          COHORT_DB_TIMEOUT_MS: '1500',
        });
        await other.cleanup();
      } finally {
        relay.thaw();
      }
      assert.deepEqual([cli.code, cli.stdout], [1, '']);
      assert.equal(cli.stderr, 'cohort: failed: PostgreSQL at DATABASE_URL did not answer within 1500 ms\n');
      assert.equal(
        await waitForValue(
          'the gateway is ready again',
          () => fetch(`${root}/ready`).then((r) => r.status),
          (s) => s === 200,
        ),
        200,
      );
      const logged = await waitForValue(
        'the generation served while PostgreSQL hung is logged',
        async () =>
          (await admin.query(`select id from ${store.schema}.inference_requests where id = $1`, [served])).rows.length,
        (n) => n === 1,
      );
      assert.equal(logged, 1);
    } finally {
      await admin.end();
      await relay.close();
    }
  });
});

/** Mounts a tmpfs of `mb` MB on a new directory; null, with the reason printed, where this machine does not allow it. */
function smallDisk(mb: number): { dir: string; unmount(): void } | string {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const dir = mkdtempSync(join(tmpdir(), 'cohort-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
  }
  return {
    dir,
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes zeros into `file` until the disk refuses (by the megabyte, then by the page); returns the bytes written. */
function fill(file: string): number {
  const fd = openSync(file, 'w');
  let n = 0;
  try {
    for (const size of [1024 * 1024, 4096]) {
      const block = Buffer.alloc(size);
      try {
        for (;;) n += writeSync(fd, block);
      } catch {}
    }
  } finally {
    closeSync(fd);
  }
  return n;
}

describe('a full disk (PGlite on a small tmpfs)', () => {
  const disk = smallDisk(96);
  const skip = typeof disk === 'string' ? disk : false;
  if (skip) process.stderr.write(`# full-disk test skipped: ${skip}\n`);
  const pool = gatewayProcesses('cohort-faults41-');
  after(async () => {
    await pool.cleanup();
    if (typeof disk !== 'string') disk.unmount();
  });

  test('requests are served while the disk is full, /ready says the store cannot write, and afterwards every generation is in the request log', {
    skip,
  }, async () => {
    const { dir } = disk as { dir: string };
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const gw = await pool.start({ dataDir, port: await freePort(), env: {} });
    const root = gw.url.replace('/api/v1', '');
    const ready = async () => {
      const r = await fetch(`${root}/ready`);
      return { status: r.status, body: (await r.json()) as { status: string; checks: Record<string, string> } };
    };
    const metric = async (name: string) => {
      const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(`${root}/metrics`)).text());
      return m ? Number(m[1]) : 0;
    };
    const served: string[] = [];
    const serve = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await generate(gw, { stream: i % 2 === 1 });
        assert.equal(r.status, 200, r.body);
        served.push(r.id!);
      }
    };
    assert.deepEqual(await ready(), {
      status: 200,
      body: { status: 'ready', checks: { store: 'ok', redis: 'not configured' } },
    });
    await serve(20);

    const filler = join(dir, 'fill');
    assert.ok(fill(filler) > 0);
    const full = await ready();
    assert.equal(full.status, 503);
    assert.equal(full.body.status, 'unavailable');
    assert.match(full.body.checks.store!, /^failed: cannot write: the data dir's disk is full \(\d+ bytes free\)$/);
    await serve(30);
    // The store refuses the request log now (it is kept and retried), so the disk really is full for it.
    assert.ok(
      (await waitForValue(
        'the request log counts a write error',
        () => metric('cohort_request_log_write_errors_total'),
        (n) => n > 0,
      )) > 0,
    );

    rmSync(filler);
    assert.equal((await waitForValue('the store can write again', ready, (r) => r.status === 200)).status, 200);
    await serve(10);
    await waitForValue(
      'the request log holds no row in memory',
      () => metric('cohort_request_log_pending_rows\\{where="memory"\\}'),
      (n) => n === 0,
    );
    assert.equal(await metric('cohort_request_log_lost_rows_total'), 0);
    await gw.kill('SIGTERM');

    const db = await openStore({ dataDir });
    try {
      const ids = (await db.db.select({ id: inferenceRequests.id }).from(inferenceRequests)).map((r) => r.id);
      assert.equal(ids.length, served.length);
      assert.deepEqual(new Set(ids), new Set(served));
    } finally {
      await db.close();
    }
  });
});

describe('a frozen Redis', { skip: redisServerMissing ?? false }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  let redis: OwnRedis;
  let gw: GatewayProcess;
  let log: () => Line[];
  let intern: string;
  before(async () => {
    redis = await startOwnRedis();
    gw = await pool.start({
      dataDir: pool.dataDir(),
      port: await freePort(),
      env: { REDIS_URL: redis.url, ...isolation },
    });
    log = logOf(gw.child);
    intern = (await runningInternOn(gw, 'frosty')).id as string;
  });
  after(async () => {
    await pool.cleanup();
    await redis.stop();
  });

  test('model requests, an intern turn and a management write are answered within 3 s, /ready says Redis does not answer; after a thaw limits are shared again', async () => {
    const root = gw.url.replace('/api/v1', '');
    assert.equal((await generate(gw, { stream: false })).status, 200);
    redis.freeze();
    try {
      const within3s = { signal: AbortSignal.timeout(3_000) };
      const json = await generate(gw, { stream: false, content: '/say while frozen' });
      assert.deepEqual([json.status, JSON.parse(json.body).choices[0].message.content], [200, 'while frozen']);
      const stream = await generate(gw, { stream: true, content: '/say streamed' });
      assert.equal(stream.status, 200);
      const turn = await fetch(`${gw.url}/interns/${intern}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.keys().api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(user('/say still turning')),
        ...within3s,
      });
      assert.equal(turn.status, 200);
      assert.equal(text(parseSse(await turn.text())), 'still turning');
      const patch = await fetch(`${gw.url}/workspaces/default`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${gw.keys().management_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ description: 'edited while Redis was frozen' }),
        signal: AbortSignal.timeout(3_000),
      });
      assert.equal(patch.status, 200);
      const ready = await fetch(`${root}/ready`, { signal: AbortSignal.timeout(3_000) });
      assert.deepEqual(
        [ready.status, await ready.json()],
        [503, { status: 'unavailable', checks: { store: 'ok', redis: 'failed: no answer within 1000 ms' } }],
      );
    } finally {
      redis.thaw();
    }
    const back = await waitForValue(
      'the gateway is ready again',
      () => fetch(`${root}/ready`).then((r) => r.status),
      (s) => s === 200,
    );
    assert.equal(back, 200);
    assert.equal((await generate(gw, { stream: false })).status, 200);
    assert.deepEqual(
      log()
        .filter((l) => l.msg.startsWith('Redis '))
        .map((l) => l.msg),
      [
        'Redis stopped answering; limits count in process until it answers again',
        'Redis answers again; limits are shared again',
      ],
    );
  });

  test('`cohort key revoke` with a frozen Redis gives up within seconds, says why, and revokes nothing', async () => {
    const cli = sharedStore('pglite');
    try {
      await (await cli.gateway()).close(); // its first start creates the keys
      const keys = await cli.cli(['key', 'list', '--json']);
      assert.equal(keys.code, 0, keys.stderr);
      const keyId = keys.json.data[0].id as string;
      redis.freeze();
      let r: Awaited<ReturnType<typeof cli.cli>>;
      try {
        r = await cli.cli(['key', 'revoke', keyId], { REDIS_URL: redis.url });
      } finally {
        redis.thaw();
      }
      assert.deepEqual(
        [r.code, r.stdout, r.stderr],
        [
          1,
          '',
          'cohort: failed: REDIS_URL: Redis did not answer within 2000 ms; unset it to run without telling gateways\n',
        ],
      );
      const after = await cli.cli(['key', 'list', '--json']);
      assert.equal(after.json.data.find((k: { id: string }) => k.id === keyId).revoked_at, null);
    } finally {
      await cli.cleanup();
    }
  });
});

describe('slots that die with their gateway', { skip: noPostgres || redisServerMissing || false }, () => {
  const pool = gatewayProcesses('cohort-faults41-');
  const store = pgStore();
  let redis: OwnRedis;
  before(async () => {
    redis = await startOwnRedis();
  });
  after(async () => {
    await pool.cleanup();
    await redis.stop();
    await store.drop();
  });

  test('a gateway killed holding a key’s model slots: the other gateway serves the key within 15 s, its 429s meanwhile saying why and when', async () => {
    const dataDir = pool.dataDir();
    const env = { ...store.env, REDIS_URL: redis.url, COHORT_MAX_MODEL_REQUESTS_PER_KEY: '2' };
    const g1 = await pool.start({ dataDir, port: await freePort(), env });
    const g2 = await pool.start({ dataDir, port: await freePort(), env });
    const key = g1.keys().api_key;
    // Two long streams hold both of the key's slots on g1.
    const holds = [0, 1].map(() => new AbortController());
    const held = await Promise.all(
      holds.map((c) =>
        fetch(`${g1.url}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'local/scripted',
            stream: true,
            messages: [{ role: 'user', content: '/sleep 600000\nlate' }],
          }),
          signal: c.signal,
        }),
      ),
    );
    assert.deepEqual(
      held.map((r) => r.status),
      [200, 200],
    );
    const busy = await generate(g2, { stream: false, key });
    assert.equal(busy.status, 429);
    assert.equal(busy.headers.get('retry-after'), '1');

    await g1.kill('SIGKILL');
    for (const c of holds) c.abort();
    const seen: { status: number; retryAfter: string | null; message: string }[] = [];
    // Every answer is kept: the refusals until the one served are what is checked below.
    await waitFor(
      'the other gateway serves the key',
      async () => {
        const r = await generate(g2, { stream: false, key });
        seen.push({
          status: r.status,
          retryAfter: r.headers.get('retry-after'),
          message: r.status === 200 ? '' : JSON.parse(r.body).error.message,
        });
        return r.status === 200;
      },
      { timeoutMs: 15_000, everyMs: 250 },
    ).catch((err: Error) => assert.fail(`${err.message}: ${JSON.stringify(seen)}`));
    assert.equal(seen.at(-1)!.status, 200, JSON.stringify(seen));
    const refusals = seen.slice(0, -1);
    const why =
      /^too many concurrent model requests for this API key \(at most 2\); 2 of them are held by a gateway that stopped answering, freed within (\d) s$/;
    for (const r of refusals) {
      assert.equal(r.status, 429);
      const m = why.exec(r.message);
      if (m) assert.equal(r.retryAfter, m[1]);
      else
        assert.deepEqual(
          [r.message, r.retryAfter],
          ['too many concurrent model requests for this API key (at most 2); retry when one ends', '1'],
        );
    }
    assert.ok(
      refusals.some((r) => why.test(r.message)),
      `a 429 named the stopped gateway: ${JSON.stringify(refusals)}`,
    );
  });
});
