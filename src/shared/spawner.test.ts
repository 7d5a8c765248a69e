import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSpawner } from './spawner.ts';
import { waitFor } from '../../test/helpers/wait.ts';

test('jobs run through the helper: stdin and stdout files, working directory, exit code, stderr, and none of our environment', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-spawner-'));
  const spawner = createSpawner();
  try {
    writeFileSync(join(dir, 'in'), 'hello\n');
    process.env.COHORT_SPAWNER_TEST_SECRET = 'not-for-children';
    const [copied, failed] = await Promise.all([
      spawner.run({
        file: '/bin/sh',
        args: ['-c', 'tr a-z A-Z; pwd >&2; env | grep -c COHORT_ >&2; exit 3'],
        cwd: dir,
        stdin: join(dir, 'in'),
        stdout: join(dir, 'out'),
      }),
      spawner.run({ file: '/nonexistent/program', args: [], cwd: dir }).catch((err: Error) => err.message),
    ]);
    assert.deepEqual(copied, { code: 3, stderr: `${dir}\n0\n` });
    assert.equal(readFileSync(join(dir, 'out'), 'utf8'), 'HELLO\n');
    assert.equal(statSync(join(dir, 'out')).mode & 0o777, 0o600);
    assert.equal(failed, 'spawn /nonexistent/program ENOENT');
    if (process.getuid?.() === 0) {
      const asNobody = await spawner.run({
        file: '/usr/bin/id',
        args: ['-u'],
        cwd: '/',
        uid: 65534,
        stdout: join(dir, 'id'),
      });
      assert.equal(asNobody.code, 0);
      assert.equal(readFileSync(join(dir, 'id'), 'utf8'), '65534\n');
    }
  } finally {
    delete process.env.COHORT_SPAWNER_TEST_SECRET;
    spawner.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a streamed job: its stdout read as it is written, and closing our end stops a command still writing', async () => {
  const spawner = createSpawner();
  try {
    const short = await spawner.connect({ file: '/bin/sh', args: ['-c', 'echo one; echo two >&2'], cwd: '/' }, [
      'stdout',
    ]);
    const chunks: Buffer[] = [];
    for await (const c of short.ends.stdout) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'one\n');
    assert.deepEqual(await short.result, { code: 0, stderr: 'two\n' });

    // `yes` writes for ever: what is not read holds it (backpressure), and our end closed ends it.
    const endless = await spawner.connect({ file: '/usr/bin/yes', args: [], cwd: '/' }, ['stdout']);
    let read = 0;
    for await (const c of endless.ends.stdout) {
      read += (c as Buffer).length;
      if (read > 1 << 20) break;
    }
    const ended = await endless.result;
    assert.equal(ended.code, 1);
    assert.match(ended.stderr, /^\/usr\/bin\/yes: standard output: (Connection reset by peer|Broken pipe)\n$/);
  } finally {
    spawner.close();
  }
});

test('a job reads the bytes it is given on descriptor 3, and one past its time limit is killed with its whole group', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-spawner-'));
  const spawner = createSpawner();
  try {
    const given = await spawner.run({
      file: '/bin/sh',
      args: ['-c', 'cat <&3'],
      cwd: '/',
      fd3: Buffer.from('a filter\n').toString('base64'),
      stdout: join(dir, 'fd3'),
    });
    assert.deepEqual(given, { code: 0, stderr: '' });
    assert.equal(readFileSync(join(dir, 'fd3'), 'utf8'), 'a filter\n');

    // The shell's child (a grandchild of the helper) goes too: its pid is written before the wait.
    const slow = await spawner.run({
      file: '/bin/sh',
      args: ['-c', 'sleep 300 & echo $! >&2; wait'],
      cwd: '/',
      timeoutMs: 200,
    });
    assert.equal(slow.timedOut, true);
    assert.equal(slow.code, null);
    const grandchild = Number(slow.stderr.trim());
    assert.ok(grandchild > 0, slow.stderr);
    const gone = () => {
      try {
        process.kill(grandchild, 0);
        return false;
      } catch {
        return true;
      }
    };
    await waitFor('the sleep is gone with its job', gone, { timeoutMs: 5_000, everyMs: 25 });
    assert.ok(gone(), 'the sleep outlived its job');
  } finally {
    spawner.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a connected job reads its stdin from us as we write it, nothing of it lost before it starts, and what we send on descriptor 3 when we send it', async () => {
  const spawner = createSpawner();
  try {
    const job = await spawner.connect({ file: '/bin/sh', args: ['-c', 'sha256sum; wc -c <&3 >&2'], cwd: '/' }, [
      'stdin',
      'stdout',
      'fd3',
    ]);
    // Written at once, before the command can have started: the helper must take none of it.
    const data = Buffer.alloc(4 << 20, 'ab');
    job.ends.stdin.end(data);
    // Later than the command's read of descriptor 3, which waits for it (a blocking descriptor:
    // wc fails with EAGAIN on a non-blocking one).
    setTimeout(() => job.ends.fd3.end('twelve bytes'), 300);
    const out: Buffer[] = [];
    for await (const c of job.ends.stdout) out.push(c as Buffer);
    const { createHash } = await import('node:crypto');
    assert.equal(Buffer.concat(out).toString(), `${createHash('sha256').update(data).digest('hex')}  -\n`);
    assert.deepEqual(await job.result, { code: 0, stderr: '12\n' });

    // A job that cannot start: its ends are connected, and its result is why.
    const bad = await spawner.connect({ file: '/nonexistent/program', args: [], cwd: '/' }, ['stdin']);
    await assert.rejects(bad.result, { message: 'spawn /nonexistent/program ENOENT' });
    bad.ends.stdin.destroy();
  } finally {
    spawner.close();
  }
});
