// The one bubblewrap builder, by table: a spec (or a profile's options) in, the exact argv out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bwrapArgs, confinedArgv, innerArgv, nodePrefix, SYSTEM_ETC, type SandboxSpec } from './bwrap.ts';
import { toolSandboxCommand, toolSpec } from './tool.ts';

const base: SandboxSpec = { unshare: [], mounts: [], chdir: '/w', command: ['true'] };

test('bwrapArgs: each part of a spec, in the order bubblewrap reads it', () => {
  const cases: [string, SandboxSpec, string[]][] = [
    ['nothing but the workdir and command', base, ['--die-with-parent', '--chdir', '/w', '--', 'true']],
    [
      'namespaces in a fixed order, whatever order they are listed in',
      { ...base, unshare: ['cgroup', 'private', 'pid', 'user'] },
      [
        ...['--unshare-user', '--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts'],
        ...['--unshare-cgroup-try', '--die-with-parent', '--chdir', '/w', '--', 'true'],
      ],
    ],
    [
      'host name, session, capabilities',
      { ...base, hostname: 'h', newSession: true, caps: ['CAP_KILL'] },
      [
        ...['--hostname', 'h', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--cap-add', 'CAP_KILL'],
        ...['--chdir', '/w', '--', 'true'],
      ],
    ],
    [
      'every kind of mount, in the order given',
      {
        ...base,
        mounts: [
          { kind: 'tmpfs', dest: '/tmp', bytes: 1024, perms: '1777' },
          { kind: 'tmpfs', dest: '/t2' },
          { kind: 'bind', src: '/a' },
          { kind: 'bind', src: '/b', dest: '/c', mode: 'ro' },
          { kind: 'bind', src: '/d', mode: 'ro', optional: true },
          { kind: 'bind', src: '/', mode: 'dev' },
          { kind: 'proc', dest: '/proc' },
          { kind: 'dev', dest: '/dev' },
          { kind: 'dir', dest: '/e', perms: '0755' },
          { kind: 'dir', dest: '/f' },
          { kind: 'symlink', target: 'usr/bin', dest: '/bin' },
          { kind: 'chmod', dest: '/e', perms: '0700' },
        ],
      },
      [
        '--die-with-parent',
        ...['--size', '1024', '--perms', '1777', '--tmpfs', '/tmp', '--tmpfs', '/t2'],
        ...['--bind', '/a', '/a', '--ro-bind', '/b', '/c', '--ro-bind-try', '/d', '/d', '--dev-bind', '/', '/'],
        ...['--proc', '/proc', '--dev', '/dev', '--perms', '0755', '--dir', '/e', '--dir', '/f'],
        ...['--symlink', 'usr/bin', '/bin', '--chmod', '0700', '/e'],
        ...['--chdir', '/w', '--', 'true'],
      ],
    ],
    [
      'environment, then the filter',
      { ...base, unsetenv: ['A'], setenv: { B: '1' }, seccomp: { fd: 4, disableUserns: false } },
      ['--die-with-parent', '--chdir', '/w', '--unsetenv', 'A', '--setenv', 'B', '1', '--seccomp', '4', '--', 'true'],
    ],
    [
      'a filter in a user namespace that can make no other',
      { ...base, unshare: ['user'], seccomp: { fd: 3, disableUserns: true } },
      ['--unshare-user', '--die-with-parent', '--chdir', '/w', '--disable-userns', '--seccomp', '3', '--', 'true'],
    ],
  ];
  for (const [name, spec, want] of cases) assert.deepEqual(bwrapArgs(spec), want, name);
});

const PRIVATE = ['--unshare-net', '--unshare-ipc', '--unshare-uts', '--die-with-parent'];
const VIEW = ['--ro-bind', '/', '/', '--dev', '/dev'];
const WORK = ['--tmpfs', '/tmp', '--bind', '/w', '/w', '--chdir', '/w'];

test('the inner sandbox: read-only root, writable work dir, no network; nested through a user namespace on the runtime /proc', () => {
  const cases: [Parameters<typeof innerArgv>[0], string[]][] = [
    [
      { workDir: '/w', command: 'ls', nested: false },
      ['--unshare-pid', ...PRIVATE, ...VIEW, '--proc', '/proc', ...WORK, '--', '/bin/sh', '-c', 'ls'],
    ],
    [
      { workDir: '/w', command: 'ls', nested: false, filtered: true, shell: '/bin/bash' },
      [
        '--unshare-pid',
        ...PRIVATE,
        ...VIEW,
        '--proc',
        '/proc',
        ...WORK,
        '--seccomp',
        '3',
        '--',
        '/bin/bash',
        '-c',
        'ls',
      ],
    ],
    [
      { workDir: '/w', command: 'ls', nested: true },
      ['--unshare-user', ...PRIVATE, ...VIEW, '--ro-bind', '/proc', '/proc', ...WORK, '--', '/bin/sh', '-c', 'ls'],
    ],
    [
      { workDir: '/w', command: 'ls', nested: true, filtered: true },
      [
        ...['--unshare-user', ...PRIVATE, ...VIEW, '--ro-bind', '/proc', '/proc', ...WORK],
        ...['--disable-userns', '--seccomp', '3', '--', '/bin/sh', '-c', 'ls'],
      ],
    ],
  ];
  for (const [opts, want] of cases) assert.deepEqual(innerArgv(opts), want, JSON.stringify(opts));
});

test('confined: the whole view unchanged, under the filter, user namespaces closed unless asked for', () => {
  const head = ['--unshare-user', '--die-with-parent', '--dev-bind', '/', '/', '--chdir', '/w'];
  assert.deepEqual(confinedArgv({ workDir: '/w', argv: ['a', 'b'] }), [
    ...head,
    ...['--disable-userns', '--seccomp', '3', '--', 'a', 'b'],
  ]);
  assert.deepEqual(confinedArgv({ workDir: '/w', argv: ['a'], userNamespaces: true }), [
    ...head,
    ...['--seccomp', '3', '--', 'a'],
  ]);
});

test("node's prefix is bound only where the userland (/usr) does not hold it", () => {
  const cases: [string, string | null][] = [
    ['/usr/bin/node', null],
    ['/usr/local/bin/node', null],
    ['/opt/node/bin/node', '/opt/node'],
    ['/root/.nvm/versions/node/v22/bin/node', '/root/.nvm/versions/node/v22'],
  ];
  for (const [path, want] of cases) assert.equal(nodePrefix(path), want, path);
});

const USERLAND_ARGS = [
  ...['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/sbin', '/sbin'],
  ...['--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64'],
  ...SYSTEM_ETC.flatMap((p) => ['--ro-bind-try', p, p]),
];

test("the server tools' sandbox: the userland, /work and /tmp in memory, no network, the filter, the runner last", () => {
  const cases: [{ diskMb: number; nodePath: string }, string[]][] = [
    [{ diskMb: 8, nodePath: '/usr/bin/node' }, []],
    [{ diskMb: 64, nodePath: '/opt/node/bin/node' }, ['--ro-bind', '/opt/node', '/opt/node']],
  ];
  for (const [opts, node] of cases) {
    const bytes = String(opts.diskMb * 1024 * 1024);
    const argv = bwrapArgs(toolSpec(opts));
    assert.deepEqual(argv.slice(0, -1), [
      ...['--unshare-user', '--unshare-pid', ...PRIVATE.slice(0, 3), '--unshare-cgroup-try'],
      ...['--hostname', 'sandbox', '--die-with-parent', '--new-session', ...USERLAND_ARGS, ...node],
      ...['--proc', '/proc', '--dev', '/dev', '--size', bytes, '--tmpfs', '/tmp', '--size', bytes, '--tmpfs', '/work'],
      ...[
        '--chdir',
        '/work',
        '--disable-userns',
        '--seccomp',
        '3',
        '--',
        opts.nodePath,
        '--max-old-space-size=64',
        '-e',
      ],
    ]);
    assert.match(argv.at(-1)!, /^\/\/ The server tools' runner/);
  }
});

test("the server tools' sandbox starts as the claimed uid, without capabilities or groups, behind the interns' rlimits", () => {
  const limits = { processes: 64, memoryMb: 512, fileMb: 16, openFiles: 256 };
  const o = { bwrapPath: '/usr/bin/bwrap', uid: 200100, limits, diskMb: 8, nodePath: '/usr/bin/node' };
  const [file, args] = toolSandboxCommand(o);
  assert.equal(file, '/usr/bin/setpriv');
  assert.deepEqual(args.slice(0, 15), [
    ...['--reuid=200100', '--regid=200100', '--clear-groups', '--inh-caps=-all', '--bounding-set=-all'],
    ...['--no-new-privs', '--', '/usr/bin/prlimit', '--nproc=64', `--data=${512 * 1024 * 1024}`],
    ...[`--fsize=${16 * 1024 * 1024}`, '--nofile=256', '--core=0', '--', '/usr/bin/bwrap'],
  ]);
  assert.deepEqual(args.slice(15), bwrapArgs(toolSpec(o)));
});
