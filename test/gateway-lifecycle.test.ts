// The gateway as `npm start` runs it, in a child process on a temp data dir: the first start
// bootstraps and writes bootstrap.json (0600) and says where without printing the keys, SIGTERM
// lets an in-flight request finish and exits 0 without a warning, a second start (through
// `cohort start`) leaves the file alone, and a busy port is one fatal line saying what to change.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { BIN, REPO } from './helpers/cli.ts';
import { waitFor } from './helpers/wait.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'cohort-life-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

type Line = { msg: string; [k: string]: unknown };
type Running = {
  child: ChildProcess;
  url: string;
  lines: Line[];
  raw: string[];
  waitFor(msg: string): Promise<Line>;
  exit: Promise<number | null>;
};

/** Starts `node --import tsx src/main.ts` (what `npm start` runs), or the same through the CLI, and waits until it listens. */
async function start(args = ['--import', 'tsx', 'src/main.ts']): Promise<Running> {
  const env: NodeJS.ProcessEnv = { ...process.env, COHORT_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  const raw: string[] = [];
  const waiters: { msg: string; resolve: (l: Line) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    raw.push(text);
    const line = JSON.parse(text) as Line;
    lines.push(line);
    for (const w of waiters.filter((w) => line.msg.startsWith(w.msg))) w.resolve(line);
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (msg: string) =>
    new Promise<Line>((resolve, reject) => {
      const seen = lines.find((l) => l.msg.startsWith(msg));
      if (seen) return resolve(seen);
      waiters.push({ msg, resolve });
      void exit.then((code) =>
        reject(new Error(`gateway exited (${code}) before logging "${msg}": ${raw.join('\n')}`)),
      );
    });
  const listening = await waitFor('cohort gateway listening');
  return { child, url: String(listening.url), lines, raw, waitFor, exit };
}

const file = join(dataDir, 'bootstrap.json');
let firstContent = '';

test('first start bootstraps, says where in one line without the keys, and shuts down gracefully', async () => {
  const gw = await start();
  const boot = JSON.parse(readFileSync(file, 'utf8'));
  firstContent = readFileSync(file, 'utf8');
  assert.deepEqual(Object.keys(boot), ['org_id', 'user_id', 'workspace_id', 'management_key', 'api_key']);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const said = gw.lines.filter((l) => l.msg.startsWith('bootstrapped'));
  assert.equal(said.length, 1);
  assert.equal(said[0]!.file, file);
  for (const text of gw.raw)
    assert.ok(!text.includes(boot.management_key) && !text.includes(boot.api_key), 'no key in a log line');

  // A request whose body is still arriving when SIGTERM comes completes, then the process exits 0.
  // Its `Expect: 100-continue` has the gateway say when it holds the request's head: then it is
  // asked to stop, and the body's rest is sent once it says it is shutting down.
  const body = JSON.stringify({ name: 'Late', slug: 'late' });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${gw.url}/workspaces`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${boot.management_key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        expect: '100-continue',
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.on('continue', () => {
      req.write(body.slice(0, 10));
      gw.child.kill('SIGTERM');
      void gw.waitFor('shutting down').then(() => req.end(body.slice(10)));
    });
    req.flushHeaders();
  });
  const res = await response;
  assert.equal(res.status, 201, res.body);
  assert.equal(JSON.parse(res.body).data.slug, 'late');
  assert.equal(await gw.exit, 0);
  // Closing the database on the way out is not losing it: nothing worse than info was said.
  assert.deepEqual(
    gw.lines.filter((l) => Number(l.level) >= 40),
    [],
  );
});

test('a second start, by `cohort start`, leaves bootstrap.json alone and bootstraps nothing', async () => {
  const gw = await start([BIN, 'start']);
  try {
    assert.equal(readFileSync(file, 'utf8'), firstContent);
    assert.deepEqual(
      gw.lines.filter((l) => l.msg.startsWith('bootstrapped')),
      [],
    );
  } finally {
    gw.child.kill('SIGTERM');
    assert.equal(await gw.exit, 0);
  }
});

test('a busy port is one fatal line that says what to do, and exit 1', async () => {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const port = (busy.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'cohort-busy-'));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      COHORT_DATA_DIR: dir,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 1);
    const fatal = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.level === 60);
    assert.deepEqual(
      fatal.map((l) => [l.msg, l.reason]),
      [
        [
          'cohort could not start',
          `127.0.0.1:${port} is already in use (another cohort, or another program): stop it, or start on another port, e.g. PORT=${port + 1} npm start`,
        ],
      ],
    );
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('on a terminal the gateway logs readable lines, not JSON', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-tty-'));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      COHORT_DATA_DIR: dir,
      PORT: '0',
      LOG_LEVEL: 'info',
      NO_COLOR: '1',
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    delete env.COHORT_LOG_FORMAT;
    // script(1) gives the gateway a pseudo-terminal as stdout.
    const cmd = `${process.execPath} --import tsx src/main.ts`;
    const child = spawn('/usr/bin/script', ['-qfec', cmd, '/dev/null'], {
      cwd: REPO,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    await waitFor('the gateway logged that it listens', () => {
      assert.equal(child.exitCode, null, out);
      return out.includes('cohort gateway listening');
    });
    child.kill('SIGTERM');
    await once(child, 'exit');
    assert.match(out, /\] INFO: cohort gateway listening\r?\n {4}url: "http:\/\/127\.0\.0\.1:\d+\/api\/v1"/);
    assert.ok(!out.includes('{"level"'), out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
