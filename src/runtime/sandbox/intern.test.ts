import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CLAIM_SCRIPT,
  etcFiles,
  parents,
  runtimeCommand,
  runtimePathsFor,
  SPARE_LAUNCH_SCRIPT,
  type RuntimeOptions,
} from './intern.ts';

const opts: RuntimeOptions = {
  bwrapPath: '/usr/bin/bwrap',
  internRoot: '/data/interns/i1/disk',
  diskImage: '/data/interns/i1/disk.img',
  runDir: '/data/run/i/i1',
  gatewaysDir: '/data/run/gw',
  etc: {
    passwd: '/data/interns/i1/etc/passwd',
    group: '/data/interns/i1/etc/group',
    hosts: '/data/interns/i1/etc/hosts',
  },
  runtimePaths: ['/srv/cohort/dist', '/srv/cohort/node_modules'],
  uid: 200007,
  tmpBytes: 16 * 1024 * 1024,
  command: ['/usr/bin/node', '/srv/cohort/dist/daemon/main.js'],
};
const pairs = (argv: string[], flag: string) =>
  argv.flatMap((a, i) => (a === flag ? [`${argv[i + 1]} ${argv[i + 2]}`] : []));

test('the launcher: a private mount namespace, the disk image, the uid, then bwrap and the daemon last', () => {
  const [file, args] = runtimeCommand(opts);
  assert.equal(file, '/usr/bin/unshare');
  assert.deepEqual(args.slice(0, 6), ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c']);
  assert.deepEqual(args.slice(7, 12), [
    'cohort-launch',
    '/data/interns/i1/disk.img',
    '/data/interns/i1/disk',
    '200007',
    '/usr/bin/bwrap',
  ]);
  assert.deepEqual(args.slice(-3), ['--', '/usr/bin/node', '/srv/cohort/dist/daemon/main.js']);
  // Without an image the launcher mounts nothing (an empty first argument).
  assert.equal(runtimeCommand({ ...opts, diskImage: null })[1][8], '');
});

test('a warm spare: the same sandbox on an empty /intern made a shared mount, no disk and no uid until its claim', () => {
  const spare = { ...opts, internRoot: '/data/run/spares/ab12/intern', diskImage: null, uid: null };
  const [file, args] = runtimeCommand(spare);
  assert.equal(file, '/usr/bin/unshare');
  assert.deepEqual(args.slice(0, 9), [
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    SPARE_LAUNCH_SCRIPT,
    'cohort-spare',
    '/data/run/spares/ab12/intern',
  ]);
  assert.match(SPARE_LAUNCH_SCRIPT, /mount --bind "\$mnt" "\$mnt"\nmount --make-shared "\$mnt"/);
  // Everything after the launcher's arguments is the sandbox a cold start gets, on the spare's /intern.
  const cold = runtimeCommand({ ...opts, internRoot: spare.internRoot })[1];
  assert.deepEqual(args.slice(9), cold.slice(11));
  // The claim mounts the image (or binds the plain directory) where the spare's /intern is shared.
  assert.match(CLAIM_SCRIPT, /img=\$1; src=\$2; mnt=\$3; uid=\$4/);
  assert.match(CLAIM_SCRIPT, /mount -o loop,nosuid,nodev "\$img" "\$mnt"; else mount --bind "\$src" "\$mnt"/);
});

test('bwrap: every namespace but the user one, capabilities cut to starting the agent, tied to the launcher', () => {
  const argv = runtimeCommand(opts)[1];
  for (const ns of [
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
  ])
    assert.ok(argv.includes(ns), ns);
  assert.equal(argv.includes('--unshare-user'), false);
  const caps = argv.flatMap((a, i) => (a === '--cap-add' || a === '--cap-drop' ? [`${a} ${argv[i + 1]}`] : []));
  assert.deepEqual(caps, ['--cap-drop ALL', '--cap-add CAP_SETUID', '--cap-add CAP_SETGID', '--cap-add CAP_KILL']);
});

test('the filesystem: only what is bound, the data dir never; the intern writable at /intern, the gateways read-only', () => {
  const argv = runtimeCommand(opts)[1];
  assert.deepEqual(pairs(argv, '--bind'), ['/data/interns/i1/disk /intern', '/data/run/i/i1 /run/cohort']);
  const ro = pairs(argv, '--ro-bind');
  assert.ok(
    ro.includes('/usr /usr') &&
      ro.includes('/data/run/gw /run/cohort/gw') &&
      ro.includes('/srv/cohort/dist /srv/cohort/dist'),
  );
  assert.ok(ro.includes('/data/interns/i1/etc/passwd /etc/passwd'));
  const sources = argv.flatMap((a, i) => (['--bind', '--ro-bind', '--ro-bind-try'].includes(a) ? [argv[i + 1]!] : []));
  assert.deepEqual(
    sources.filter((src) => src === '/' || src === '/data' || src === '/etc' || src === '/proc'),
    [],
    'no bind of /, the data dir, /etc or the host /proc as a whole',
  );
  assert.ok(argv.join(' ').includes('--size 16777216 --perms 1777 --tmpfs /tmp'));
  assert.ok(argv.join(' ').includes('--chmod 0700 /run/cohort'));
});

test('a project under /tmp stays visible: the private /tmp is mounted before anything is bound', () => {
  const argv = runtimeCommand({ ...opts, runtimePaths: ['/tmp/ci-clone/dist'] })[1];
  const tmpfs = argv.indexOf('/tmp', argv.indexOf('--tmpfs'));
  const firstBind = argv.findIndex(
    (a) => a === '--bind' || a === '--ro-bind' || a === '--ro-bind-try' || a === '--dir',
  );
  assert.ok(tmpfs > 0 && tmpfs < firstBind, 'the tmpfs comes first');
  assert.ok(argv.join(' ').includes('--ro-bind /tmp/ci-clone/dist /tmp/ci-clone/dist'));
  assert.ok(argv.join(' ').includes('--perms 0755 --dir /tmp/ci-clone'));
  assert.equal(argv.join(' ').includes('--dir /tmp '), false, '/tmp keeps its 1777');
});

test('parents: every directory above the bound paths, outermost first, for bwrap to make passable', () => {
  assert.deepEqual(parents(['/srv/cohort/dist', '/etc/ssl/certs', '/usr']), [
    '/etc',
    '/srv',
    '/etc/ssl',
    '/srv/cohort',
  ]);
});

test("runtime paths: node's prefix when it is not under /usr, and the code's paths once each", () => {
  assert.deepEqual(
    runtimePathsFor({ execPath: '/usr/bin/node', codePaths: ['/srv/c/dist', '/srv/c/dist/x', '/srv/c/node_modules'] }),
    ['/srv/c/dist', '/srv/c/node_modules'],
  );
  assert.deepEqual(runtimePathsFor({ execPath: '/opt/node/bin/node', codePaths: ['/srv/c/dist'] }), [
    '/opt/node',
    '/srv/c/dist',
  ]);
});

test('/etc files name the intern user by its uid', () => {
  const e = etcFiles(200007);
  assert.match(e.passwd, /^intern:x:200007:200007:intern:\/intern\/home:\/bin\/sh$/m);
  assert.match(e.group, /^intern:x:200007:$/m);
  assert.match(e.hosts, /^127\.0\.0\.1 localhost intern$/m);
});
