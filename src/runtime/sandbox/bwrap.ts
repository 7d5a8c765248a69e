// Bubblewrap's argv, built in one place (bwrapArgs: a sandbox's spec in, argv out; pure, tested by
// table in bwrap.test.ts), and the sandboxes of a tenant's commands as specs of it:
// - manual mode's inner sandbox (innerArgv): read-only root, private /tmp, writable work dir, no
//   network (not even loopback: --unshare-net leaves the sandbox its own, empty network
//   namespace). Inside an isolated runtime the agent is an unprivileged uid, so the sandbox nests
//   through a user namespace and reuses the runtime's own /proc (a fresh one cannot be mounted
//   there); as root on a bare host it gets its own PID namespace and /proc;
// - the confinement of everything else a tenant runs there (confinedArgv: self-drive's shell,
//   Claude Code, Codex): the runtime's whole view, unchanged, under the tenant's seccomp filter.
// The intern's runtime (intern.ts) and the server tools' command sandbox (tool.ts) are specs of it too.
// Given a filter, the command runs under it (seccomp.ts) in a user namespace that can make no
// other (--disable-userns). May import: node built-ins.
import { dirname } from 'node:path';

export const BWRAP_PATH = '/usr/bin/bwrap';

/** The descriptor a sandboxed command's seccomp program is passed on (runShell writes it there). */
export const FILTER_FD = 3;

/** One step of a sandbox's view. bubblewrap applies them in order: a later mount covers an earlier one. */
export type Mount =
  | { kind: 'bind'; src: string; dest?: string; mode?: 'rw' | 'ro' | 'dev'; optional?: boolean }
  | { kind: 'tmpfs'; dest: string; bytes?: number; perms?: string }
  | { kind: 'proc' | 'dev'; dest: string }
  | { kind: 'dir'; dest: string; perms?: string }
  | { kind: 'symlink'; target: string; dest: string }
  | { kind: 'chmod'; dest: string; perms: string };

/** A sandbox, as data. */
export type SandboxSpec = {
  /** Namespaces of its own; 'private' is network, IPC and host name, which every sandbox of a
   * tenant's has (the inner sandbox, the intern's runtime, the server tools' sandbox). */
  unshare: Array<'user' | 'pid' | 'private' | 'cgroup'>;
  hostname?: string;
  /** A session of its own: no controlling terminal to inject input into. */
  newSession?: boolean;
  /** The only capabilities kept (all others dropped), for a root inside that needs a few. */
  caps?: string[];
  mounts: Mount[];
  chdir: string;
  unsetenv?: string[];
  setenv?: Record<string, string>;
  /** The seccomp program's descriptor, and (disableUserns) a user namespace that can make no other. */
  seccomp?: { fd: number; disableUserns: boolean };
  command: string[];
};

const UNSHARE = {
  user: ['--unshare-user'],
  pid: ['--unshare-pid'],
  private: ['--unshare-net', '--unshare-ipc', '--unshare-uts'],
  cgroup: ['--unshare-cgroup-try'],
} as const;

function mountArgs(m: Mount): string[] {
  const perms = (p: string | undefined) => (p ? ['--perms', p] : []);
  switch (m.kind) {
    case 'bind': {
      const flag = { rw: '--bind', ro: '--ro-bind', dev: '--dev-bind' }[m.mode ?? 'rw'];
      return [m.optional ? `${flag}-try` : flag, m.src, m.dest ?? m.src];
    }
    case 'tmpfs':
      return [...(m.bytes === undefined ? [] : ['--size', String(m.bytes)]), ...perms(m.perms), '--tmpfs', m.dest];
    case 'proc':
    case 'dev':
      return [`--${m.kind}`, m.dest];
    case 'dir':
      return [...perms(m.perms), '--dir', m.dest];
    case 'symlink':
      return ['--symlink', m.target, m.dest];
    case 'chmod':
      return ['--chmod', m.perms, m.dest];
  }
}

/** The one builder: a sandbox's spec in, bubblewrap's argv (without bwrap itself) out. */
export function bwrapArgs(s: SandboxSpec): string[] {
  const order = ['user', 'pid', 'private', 'cgroup'] as const;
  return [
    ...order.filter((n) => s.unshare.includes(n)).flatMap((n) => UNSHARE[n]),
    ...(s.hostname ? ['--hostname', s.hostname] : []),
    '--die-with-parent',
    ...(s.newSession ? ['--new-session'] : []),
    ...(s.caps ? ['--cap-drop', 'ALL', ...s.caps.flatMap((c) => ['--cap-add', c])] : []),
    ...s.mounts.flatMap(mountArgs),
    '--chdir',
    s.chdir,
    ...(s.unsetenv ?? []).flatMap((v) => ['--unsetenv', v]),
    ...Object.entries(s.setenv ?? {}).flatMap(([k, v]) => ['--setenv', k, v]),
    ...(s.seccomp ? [...(s.seccomp.disableUserns ? ['--disable-userns'] : []), '--seccomp', String(s.seccomp.fd)] : []),
    '--',
    ...s.command,
  ];
}

/** Whether this process would nest (an unprivileged uid, as inside an intern's runtime). */
export const nestedHere = (): boolean => process.getuid?.() !== 0;

export type BwrapOptions = {
  workDir: string;
  command: string;
  shell?: string;
  nested?: boolean;
  /** The tenant's seccomp program is readable on FILTER_FD. */
  filtered?: boolean;
};

/** Manual mode's inner sandbox around one shell command. */
export function innerArgv(opts: BwrapOptions): string[] {
  const nested = opts.nested ?? nestedHere();
  return bwrapArgs({
    unshare: nested ? ['user', 'private'] : ['pid', 'private'],
    // No new session: runShell starts bwrap in a session of its own, without a controlling
    // terminal to inject input into, and that session's group carries the agent's priority (a
    // second session would start at nice 0, src/shared/priority.ts).
    mounts: [
      { kind: 'bind', src: '/', mode: 'ro' },
      { kind: 'dev', dest: '/dev' },
      nested ? { kind: 'bind', src: '/proc', mode: 'ro' } : { kind: 'proc', dest: '/proc' },
      { kind: 'tmpfs', dest: '/tmp' },
      // After the tmpfs, so a work dir under /tmp is the real one, not hidden by it.
      { kind: 'bind', src: opts.workDir },
    ],
    chdir: opts.workDir,
    seccomp: opts.filtered ? { fd: FILTER_FD, disableUserns: nested } : undefined,
    command: [opts.shell ?? '/bin/sh', '-c', opts.command],
  });
}

/** Runs `argv` as it would run anyway (same files, network and processes) but under the filter on
 * FILTER_FD, in a user namespace of its own that can make no other, unless `userNamespaces` (an
 * agent that builds sandboxes of its own, as Codex does). For an unprivileged uid inside an
 * intern's runtime. */
export function confinedArgv(opts: { workDir: string; argv: string[]; userNamespaces?: boolean }): string[] {
  return bwrapArgs({
    unshare: ['user'],
    mounts: [{ kind: 'bind', src: '/', mode: 'dev' }],
    chdir: opts.workDir,
    seccomp: { fd: FILTER_FD, disableUserns: !opts.userNamespaces },
    command: opts.argv,
  });
}

/** Files of the host's /etc that programs of its userland read (certificates, the loader cache,
 * the time zone, name lookup), bound where they exist. */
export const SYSTEM_ETC = [
  '/etc/alternatives',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/ld.so.cache',
  '/etc/localtime',
  '/etc/nsswitch.conf',
];

/** The host's userland, read-only, for a sandbox built from an empty root: /usr with the merged-/usr
 * links (/bin, /sbin, /lib, /lib64) and SYSTEM_ETC. An intern's runtime and the server tools'
 * command sandbox both start from it. */
export const USERLAND: Mount[] = [
  { kind: 'bind', src: '/usr', mode: 'ro' },
  ...['bin', 'sbin', 'lib', 'lib64'].map((d): Mount => ({ kind: 'symlink', target: `usr/${d}`, dest: `/${d}` })),
  ...SYSTEM_ETC.map((p): Mount => ({ kind: 'bind', src: p, mode: 'ro', optional: true })),
];

/** node's own prefix (two levels above its executable) where it is not under /usr (the userland has that). */
export function nodePrefix(execPath: string): string | null {
  const prefix = dirname(dirname(execPath));
  return prefix === '/usr' || prefix.startsWith('/usr/') ? null : prefix;
}
