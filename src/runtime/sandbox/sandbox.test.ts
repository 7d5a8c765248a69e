import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { runShell, sandboxAvailable } from './run.ts';
import { noSandbox } from '../../../test/helpers/sandbox.ts';

let root: string;
let work: string;
let outside: string;
let server: Server;
let port: number;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cohort-sandbox-'));
  work = join(root, 'work');
  outside = join(root, 'outside');
  mkdirSync(work);
  mkdirSync(outside);
  server = createServer((s) => s.end('hello\n'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

after(async () => {
  await new Promise((r) => server.close(r));
  rmSync(root, { recursive: true, force: true });
});

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

test('a missing bubblewrap is detected', () => {
  assert.equal(sandboxAvailable('/nonexistent/bwrap'), false);
});

test('sandboxed: writes in the work dir land, writes outside do not; unsandboxed both land', {
  skip: noSandbox,
}, async () => {
  const cmd = `echo in > inside.txt; echo out > ${outside}/sandboxed.txt; echo done`;
  const boxed = await runShell({ command: cmd, workDir: work, sandboxed: true, env });
  assert.equal(existsSync(join(work, 'inside.txt')), true);
  assert.equal(existsSync(join(outside, 'sandboxed.txt')), false);
  assert.match(boxed.output, /done/);

  const free = await runShell({ command: `echo out > ${outside}/free.txt`, workDir: work, sandboxed: false, env });
  assert.equal(free.exitCode, 0);
  assert.equal(existsSync(join(outside, 'free.txt')), true);
});

test('sandboxed: cannot connect to loopback; unsandboxed can', { skip: noSandbox }, async () => {
  const probe = `${process.execPath} -e "require('net').connect(${port},'127.0.0.1').on('data',d=>{console.log('got '+d);process.exit(0)}).on('error',e=>{console.log('error '+e.code);process.exit(3)})"`;
  const boxed = await runShell({ command: probe, workDir: work, sandboxed: true, env });
  assert.equal(boxed.exitCode, 3);
  assert.match(boxed.output, /^error E/);
  const free = await runShell({ command: probe, workDir: work, sandboxed: false, env });
  assert.equal(free.exitCode, 0);
  assert.equal(free.output, 'got hello\n\n');
});

test('output is capped and marked truncated; abort kills the command', { skip: noSandbox }, async () => {
  const big = await runShell({
    command: 'yes | head -c 10000',
    workDir: work,
    sandboxed: false,
    env,
    maxOutputBytes: 100,
  });
  assert.equal(big.output.length, 100);
  assert.equal(big.truncated, true);
  const ac = new AbortController();
  const running = runShell({ command: 'sleep 30', workDir: work, sandboxed: true, env, signal: ac.signal });
  ac.abort();
  const r = await running;
  assert.equal(r.signal, 'SIGKILL');
});

test('stdout and stderr read in the order the command wrote them, sandboxed or not', { skip: noSandbox }, async () => {
  // A writer that waits for nothing: both pipes would be ready at once if they were two.
  const cmd = 'for i in 1 2 3 4 5 6 7 8; do echo e$i >&2; echo o$i; done';
  const want = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `e${i}\no${i}\n`).join('');
  for (const sandboxed of [true, false]) {
    const r = await runShell({ command: cmd, workDir: work, sandboxed, env });
    assert.equal(r.output, want, `sandboxed: ${sandboxed}`);
  }
});
