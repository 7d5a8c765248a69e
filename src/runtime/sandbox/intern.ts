// The intern's isolated runtime, as data: the command line that starts a daemon inside its own
// bubblewrap sandbox (mount, PID, network, IPC and UTS namespaces), on its own disk, with the
// capabilities it needs to run its agent as the intern's own uid. Pure, so it is tested as data;
// local.ts runs it. See docs/isolation.md for what an intern can and cannot reach.
// May import: node built-ins, ../../../runtime/sandbox/bwrap.ts (the host userland's binds).
import { dirname } from 'node:path';
import { SYSTEM_ETC, userlandArgv } from '../../../runtime/sandbox/bwrap.ts';

/** The descriptor the launcher passes bubblewrap the runtime's seccomp program on (local.ts writes it). */
export const RUNTIME_FILTER_FD = 4;

/** Paths inside the sandbox: fixed, so an intern's files and sessions mean the same wherever it runs. */
export const IN_SANDBOX = {
  /** The intern's disk: daemon/ (root only), agent/, work/, home/ (the intern's uid). */
  intern: '/intern',
  /** The daemon's socket and the gateways' sockets, root only (the agent's uid cannot enter). */
  run: '/run/cohort',
  daemonSocket: '/run/cohort/d.sock',
  gateways: '/run/cohort/gw',
} as const;

/** Shell lines that make a mounted intern disk (the shell's directory) ready for the intern's uid
 * ($uid): its directories, their modes, and the agent's files handed to the uid once. A wake finds
 * everything in place, and then starts one process here (stat) rather than one per step. */
const PREPARE_DISK = [
  'for d in daemon agent work home; do [ -d "$d" ] || mkdir "$d"; done',
  '[ ! -e lost+found ] || rm -rf lost+found',
  // The agent's uid passes through /intern to its work dir: an image's root is 0755, a plain
  // directory (COHORT_INTERN_DISK_MB=0) was made 0700 by the gateway (its parents stay 0700 on the host).
  // Root inside has no CAP_DAC_OVERRIDE: it enters the intern's directories as "other" (spawning the agent there).
  // Directories written before isolation (or under another uid) are handed to this intern's uid once.
  "stat -c '%a %u %n' . daemon agent work home | while read -r mode owner name; do",
  '  if [ "$name" = daemon ]; then want=700; else want=755; fi',
  '  [ "$mode" = "$want" ] || chmod "$want" "$name"',
  '  case "$name" in agent|work|home) [ "$owner" = "$uid" ] || chown -R "$uid:$uid" "$name" ;; esac',
  'done',
];

/** Runs the sandbox ("$@") as this shell's child, not the gateway's: --die-with-parent then ties it
 * to this shell (killing it ends every process inside) and not to the gateway, which may restart. A
 * background job's stdin would be /dev/null, so stdin (the secret's pipe) passes on as fd 3. */
const RUN_SANDBOX = ['exec 3<&0', '"$@" <&3 3<&- &', 'exec 3<&-', 'wait $!'];

/** The shell launcher (run as root in a private mount namespace): mounts the intern's disk image,
 * prepares its directories for the intern's uid, then becomes bubblewrap (the daemon lowers its own
 * priority once started: COHORT_DAEMON_NICE). */
export const LAUNCH_SCRIPT = [
  'set -e',
  // The gateway's umask (077) would make the directories bwrap creates (/etc, /run) unreadable to the intern's uid.
  'umask 022',
  'img=$1; mnt=$2; uid=$3; shift 3',
  'if [ -n "$img" ]; then mount -o loop,nosuid,nodev "$img" "$mnt"; fi',
  'cd "$mnt"',
  ...PREPARE_DISK,
  ...RUN_SANDBOX,
].join('\n');

/** The launcher of a warm spare (docs/fleet.md): no intern yet, so its /intern is an empty
 * directory made a shared mount, which the claim's mount (CLAIM_SCRIPT, run in this namespace)
 * reaches through into the sandbox. */
export const SPARE_LAUNCH_SCRIPT = [
  'set -e',
  'umask 022',
  'mnt=$1; shift',
  'mount --bind "$mnt" "$mnt"',
  'mount --make-shared "$mnt"',
  ...RUN_SANDBOX,
].join('\n');

/** Gives a spare its intern (run by nsenter in the spare launcher's mount namespace): the intern's
 * disk image, or its plain directory, mounted on the spare's /intern, and prepared as at a start. */
export const CLAIM_SCRIPT = [
  'set -e',
  'umask 022',
  'img=$1; src=$2; mnt=$3; uid=$4',
  'if [ -n "$img" ]; then mount -o loop,nosuid,nodev "$img" "$mnt"; else mount --bind "$src" "$mnt"; fi',
  'cd "$mnt"',
  ...PREPARE_DISK,
].join('\n');

export type RuntimeOptions = {
  bwrapPath: string;
  /** Host directory that becomes /intern: the mount point of the disk image, or the intern's plain directory. */
  internRoot: string;
  /** The disk image to mount on internRoot, or null for a plain directory (no size limit). */
  diskImage: string | null;
  /** Host directory bound at /run/cohort (root only): the daemon's socket appears there. */
  runDir: string;
  /** Host directory of the gateways' sockets, bound read-only at /run/cohort/gw. */
  gatewaysDir: string;
  /** Host files generated for the intern (passwd, group, hosts), bound read-only into /etc. */
  etc: { passwd: string; group: string; hosts: string };
  /** Read-only host paths the runtime needs (node, the daemon's and agent's code). */
  runtimePaths: string[];
  /** The intern's uid; null for a warm spare, whose intern (and so uid and disk) comes at its claim. */
  uid: number | null;
  tmpBytes: number;
  /** The daemon's command line, as it runs inside. */
  command: string[];
};

/** Host paths every runtime reads: the OS userland and the files programs expect in /etc. */
const SYSTEM_RO = ['/usr', ...SYSTEM_ETC];

/** The programs that start an intern: [file, args] for spawn. */
export function runtimeCommand(o: RuntimeOptions): [string, string[]] {
  const bwrap = [
    o.bwrapPath,
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'intern',
    '--die-with-parent',
    '--new-session',
    // Root inside keeps only what starting the agent as the intern's uid needs; no_new_privs is bwrap's.
    '--cap-drop',
    'ALL',
    '--cap-add',
    'CAP_SETUID',
    '--cap-add',
    'CAP_SETGID',
    '--cap-add',
    'CAP_KILL',
    // Mounted before the binds: a project (or data dir) under /tmp is bound over the private /tmp, not hidden by it.
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(o.tmpBytes),
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
    // bwrap makes the parents of a mount point 0700; the intern's uid must pass through them.
    // (Not /tmp itself, which keeps its 1777.)
    ...parents([...SYSTEM_RO, '/etc/passwd', IN_SANDBOX.gateways, ...o.runtimePaths])
      .filter((d) => d !== '/tmp')
      .flatMap((d) => ['--perms', '0755', '--dir', d]),
    ...userlandArgv(),
    '--ro-bind',
    o.etc.passwd,
    '/etc/passwd',
    '--ro-bind',
    o.etc.group,
    '/etc/group',
    '--ro-bind',
    o.etc.hosts,
    '/etc/hosts',
    ...unique(o.runtimePaths).flatMap((p) => ['--ro-bind', p, p]),
    '--bind',
    o.internRoot,
    IN_SANDBOX.intern,
    '--bind',
    o.runDir,
    IN_SANDBOX.run,
    '--ro-bind',
    o.gatewaysDir,
    IN_SANDBOX.gateways,
    '--chmod',
    '0700',
    IN_SANDBOX.run,
    '--chdir',
    IN_SANDBOX.intern,
    // The launcher's cd would otherwise tell the intern where its disk is on the host.
    '--unsetenv',
    'OLDPWD',
    '--setenv',
    'PWD',
    IN_SANDBOX.intern,
    // Every process of the intern runs under this filter; what a tenant runs, under the tenant's
    // too (docs/isolation.md, "System calls").
    '--seccomp',
    String(RUNTIME_FILTER_FD),
    '--',
    ...o.command,
  ];
  const namespace = ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c'];
  if (o.uid === null)
    return ['/usr/bin/unshare', [...namespace, SPARE_LAUNCH_SCRIPT, 'cohort-spare', o.internRoot, ...bwrap]];
  const launch = [
    ...namespace,
    LAUNCH_SCRIPT,
    'cohort-launch',
    o.diskImage ?? '',
    o.internRoot,
    String(o.uid),
    ...bwrap,
  ];
  return ['/usr/bin/unshare', launch];
}

/** Every directory above the given paths (not / and not the paths themselves), outermost first. */
export function parents(paths: string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    const parts = p.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) out.add(`/${parts.slice(0, i).join('/')}`);
  }
  return [...out].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
}

/** Paths under one another are bound once (the outermost); order kept. */
function unique(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length);
  const kept = sorted.filter(
    (p, i) => !sorted.slice(0, i).some((q) => p === q || p.startsWith(q.endsWith('/') ? q : `${q}/`)),
  );
  return paths.filter((p, i) => kept.includes(p) && paths.indexOf(p) === i);
}

/** The read-only paths a daemon needs: node's own prefix where it is not under /usr, and the project paths its code loads from. */
export function runtimePathsFor(opts: { execPath: string; codePaths: string[] }): string[] {
  const nodePrefix = dirname(dirname(opts.execPath));
  return unique([...(nodePrefix === '/usr' || nodePrefix.startsWith('/usr/') ? [] : [nodePrefix]), ...opts.codePaths]);
}

/** /etc/passwd, /etc/group and /etc/hosts for a sandbox whose agent runs as `uid`. */
export function etcFiles(uid: number): { passwd: string; group: string; hosts: string } {
  return {
    passwd: `root:x:0:0:root:/root:/bin/sh\nintern:x:${uid}:${uid}:intern:${IN_SANDBOX.intern}/home:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nintern:x:${uid}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1 localhost intern\n::1 localhost ip6-localhost\n',
  };
}
