// The intern runtime's launcher scripts (./scripts/*.sh), each run on its own by a real /bin/sh: in a
// private mount namespace of its own (unshare) where it mounts, as root where it hands files to a uid.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLAIM_SCRIPT, LAUNCH_SCRIPT, script, SPARE_LAUNCH_SCRIPT } from './intern.ts';

const UID = 200_123;
const root = process.getuid?.() === 0;
const noRoot = root ? false : 'the scripts mount and chown: they run as root';
const unshare = (args: string[], input = '') =>
  spawnSync('/usr/bin/unshare', ['--mount', '--propagation', 'private', '--', ...args], { input, encoding: 'utf8' });

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-scripts-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A disk as a claim or a start finds it: a stray lost+found, and a work dir left root's and 0700. */
function staleDisk(name: string): string {
  const disk = join(dir, name);
  mkdirSync(join(disk, 'lost+found'), { recursive: true });
  mkdirSync(join(disk, 'work'), { mode: 0o700 });
  writeFileSync(join(disk, 'work', 'notes.txt'), 'mine');
  return disk;
}

/** Modes and owners of a prepared disk's directories, and of a file the intern had. */
const layout = (disk: string) =>
  Object.fromEntries(
    ['daemon', 'agent', 'work', 'home', 'work/notes.txt'].map((p) => {
      const s = statSync(join(disk, p));
      return [p, `${(s.mode & 0o777).toString(8)} ${s.uid}`];
    }),
  );
const prepared = {
  daemon: '700 0',
  agent: `755 ${UID}`,
  work: `755 ${UID}`,
  home: `755 ${UID}`,
  'work/notes.txt': `644 ${UID}`,
};

test('the scripts are their files with the includes joined in and the comments left out', () => {
  for (const s of [LAUNCH_SCRIPT, SPARE_LAUNCH_SCRIPT, CLAIM_SCRIPT])
    assert.deepEqual(
      s.split('\n').filter((l) => l.trimStart().startsWith('#') || l.trim() === ''),
      [],
    );
  assert.ok(LAUNCH_SCRIPT.includes(script('prepare-disk.sh')) && LAUNCH_SCRIPT.endsWith(script('run-sandbox.sh')));
  assert.ok(CLAIM_SCRIPT.endsWith(script('prepare-disk.sh')));
  assert.ok(SPARE_LAUNCH_SCRIPT.endsWith(script('run-sandbox.sh')));
});

test('run-sandbox.sh: the command runs as the shell’s child with the shell’s stdin, and its exit status is the shell’s', () => {
  const run = (argv: string[], input: string) =>
    spawnSync('/bin/sh', ['-c', script('run-sandbox.sh'), 'sh', ...argv], { input, encoding: 'utf8' });
  const echoed = run(['/bin/cat'], 'the secret\n');
  assert.deepEqual([echoed.status, echoed.stdout], [0, 'the secret\n']);
  assert.equal(run(['/bin/sh', '-c', 'exit 3'], '').status, 3);
});

test('prepare-disk.sh: the four directories, their modes, the intern’s files handed to its uid, lost+found gone', {
  skip: noRoot,
}, () => {
  const disk = staleDisk('prepare');
  const r = spawnSync('/bin/sh', ['-c', `set -e; uid=${UID}\n${script('prepare-disk.sh')}`], {
    cwd: disk,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(layout(disk), prepared);
  assert.equal(existsSync(join(disk, 'lost+found')), false);
  assert.equal((statSync(disk).mode & 0o777).toString(8), '755');
});

test('launch.sh: a plain directory prepared, then the sandbox command run there with the secret on its stdin', {
  skip: noRoot,
}, () => {
  const disk = staleDisk('launch');
  const r = unshare(
    ['/bin/sh', '-c', LAUNCH_SCRIPT, 'cohort-launch', '', disk, String(UID), '/bin/sh', '-c', 'pwd; cat'],
    'the secret\n',
  );
  assert.deepEqual([r.status, r.stdout, r.stderr], [0, `${disk}\nthe secret\n`, '']);
  assert.deepEqual(layout(disk), prepared);
});

test('spare-launch.sh: the empty /intern is a shared mount when the sandbox starts, so a claim’s mount reaches it', {
  skip: noRoot,
}, () => {
  const mnt = join(dir, 'spare-intern');
  mkdirSync(mnt);
  const r = unshare([
    '/bin/sh',
    '-c',
    SPARE_LAUNCH_SCRIPT,
    'cohort-spare',
    mnt,
    '/usr/bin/findmnt',
    '-no',
    'PROPAGATION',
    mnt,
  ]);
  assert.deepEqual([r.status, r.stdout.trim(), r.stderr], [0, 'shared', '']);
});

test('claim.sh: a plain directory bound on the spare’s mount point, and prepared as at a start', {
  skip: noRoot,
}, () => {
  const disk = staleDisk('claim');
  const mnt = join(dir, 'claim-mnt');
  mkdirSync(mnt);
  const r = unshare([
    '/bin/sh',
    '-c',
    `${CLAIM_SCRIPT}\nfindmnt -no TARGET "$mnt"`,
    'cohort-claim',
    '',
    disk,
    mnt,
    String(UID),
  ]);
  assert.deepEqual([r.status, r.stdout.trim(), r.stderr], [0, mnt, '']);
  // The mount went with the namespace; what it prepared is the intern's directory itself.
  assert.deepEqual(layout(disk), prepared);
});
