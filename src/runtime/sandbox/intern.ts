// The intern's isolated runtime, as data: the command line that starts a daemon inside its own
// bubblewrap sandbox (mount, PID, network, IPC and UTS namespaces), on its own disk, with the
// capabilities it needs to run its agent as the intern's own uid. Pure but for reading its shell
// scripts (./scripts/*.sh, each tested on its own), so it is tested as data; the gateway's local
// provisioner (src/gateway/interns/provisioner/local.ts) runs it. See docs/isolation.md for what
// an intern can and cannot reach. Not exported from index.ts: the daemon, bundled into one file,
// has no scripts/ beside it and never starts a runtime.
// May import: node built-ins, ./bwrap.ts (the builder, the host userland's binds).
import { readFileSync } from 'node:fs';
import { bwrapArgs, type Mount, nodePrefix, type SandboxSpec, SYSTEM_ETC, USERLAND } from './bwrap.ts';

/** The descriptor the launcher passes bubblewrap the runtime's seccomp program on (the provisioner writes it). */
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

/** A launcher script of scripts/ with its `#include` lines replaced by the files they name, and
 * its comment lines left out (it runs as `sh -c`, so it stands whole in the launcher's argv). */
export function script(name: string): string {
  const text = readFileSync(new URL(`./scripts/${name}`, import.meta.url), 'utf8');
  return text
    .split('\n')
    .flatMap((line) => {
      const included = /^#include (\S+)$/.exec(line);
      if (included) return [script(included[1]!)];
      return line.trim() === '' || line.trimStart().startsWith('#') ? [] : [line];
    })
    .join('\n');
}

/** The launcher of an intern's runtime (./scripts/launch.sh). */
export const LAUNCH_SCRIPT = script('launch.sh');
/** The launcher of a warm spare (./scripts/spare-launch.sh). */
export const SPARE_LAUNCH_SCRIPT = script('spare-launch.sh');
/** Gives a spare its intern (./scripts/claim.sh). */
export const CLAIM_SCRIPT = script('claim.sh');

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

/** The intern's runtime, as a spec of bwrap.ts's builder. */
export function runtimeSpec(o: RuntimeOptions): SandboxSpec {
  return {
    unshare: ['pid', 'private', 'cgroup'],
    hostname: 'intern',
    newSession: true,
    // Root inside keeps only what starting the agent as the intern's uid needs; no_new_privs is bwrap's.
    caps: ['CAP_SETUID', 'CAP_SETGID', 'CAP_KILL'],
    mounts: [
      // Mounted before the binds: a project (or data dir) under /tmp is bound over the private /tmp, not hidden by it.
      { kind: 'proc', dest: '/proc' },
      { kind: 'dev', dest: '/dev' },
      { kind: 'tmpfs', dest: '/tmp', bytes: o.tmpBytes, perms: '1777' },
      // bwrap makes the parents of a mount point 0700; the intern's uid must pass through them.
      // (Not /tmp itself, which keeps its 1777.)
      ...parents([...SYSTEM_RO, '/etc/passwd', IN_SANDBOX.gateways, ...o.runtimePaths])
        .filter((d) => d !== '/tmp')
        .map((d): Mount => ({ kind: 'dir', dest: d, perms: '0755' })),
      ...USERLAND,
      { kind: 'bind', src: o.etc.passwd, dest: '/etc/passwd', mode: 'ro' },
      { kind: 'bind', src: o.etc.group, dest: '/etc/group', mode: 'ro' },
      { kind: 'bind', src: o.etc.hosts, dest: '/etc/hosts', mode: 'ro' },
      ...unique(o.runtimePaths).map((p): Mount => ({ kind: 'bind', src: p, mode: 'ro' })),
      { kind: 'bind', src: o.internRoot, dest: IN_SANDBOX.intern },
      { kind: 'bind', src: o.runDir, dest: IN_SANDBOX.run },
      { kind: 'bind', src: o.gatewaysDir, dest: IN_SANDBOX.gateways, mode: 'ro' },
      { kind: 'chmod', dest: IN_SANDBOX.run, perms: '0700' },
    ],
    chdir: IN_SANDBOX.intern,
    // The launcher's cd would otherwise tell the intern where its disk is on the host.
    unsetenv: ['OLDPWD'],
    setenv: { PWD: IN_SANDBOX.intern },
    // Every process of the intern runs under this filter; what a tenant runs, under the tenant's
    // too (docs/isolation.md, "System calls").
    seccomp: { fd: RUNTIME_FILTER_FD, disableUserns: false },
    command: o.command,
  };
}

/** The programs that start an intern: [file, args] for spawn. */
export function runtimeCommand(o: RuntimeOptions): [string, string[]] {
  const bwrap = [o.bwrapPath, ...bwrapArgs(runtimeSpec(o))];
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
  const node = nodePrefix(opts.execPath);
  return unique([...(node ? [node] : []), ...opts.codePaths]);
}

/** /etc/passwd, /etc/group and /etc/hosts for a sandbox whose agent runs as `uid`. */
export function etcFiles(uid: number): { passwd: string; group: string; hosts: string } {
  return {
    passwd: `root:x:0:0:root:/root:/bin/sh\nintern:x:${uid}:${uid}:intern:${IN_SANDBOX.intern}/home:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nintern:x:${uid}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1 localhost intern\n::1 localhost ip6-localhost\n',
  };
}
