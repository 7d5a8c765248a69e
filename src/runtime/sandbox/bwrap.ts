// Bubblewrap argv for the commands a tenant runs inside an intern's runtime (pure, tested as data):
// - manual mode's inner sandbox: read-only root, private /tmp, writable work dir, no network (not
//   even loopback: --unshare-net leaves the sandbox its own, empty network namespace). Inside an
//   isolated runtime the agent is an unprivileged uid, so the sandbox nests through a user
//   namespace and reuses the runtime's own /proc (a fresh one cannot be mounted there); as root on
//   a bare host it gets its own PID namespace and /proc;
// - the confinement of everything else a tenant runs there (self-drive's shell, Claude Code,
//   Codex): the runtime's whole view, unchanged, under the tenant's seccomp filter.
// Either way, given a filter, the command runs under it (seccomp.ts) in a user namespace that can
// make no other (--disable-userns).
export const BWRAP_PATH = '/usr/bin/bwrap';

/** The descriptor a sandboxed command's seccomp program is passed on (runShell writes it there). */
export const FILTER_FD = 3;

export type BwrapOptions = {
  workDir: string;
  command: string;
  shell?: string;
  nested?: boolean;
  /** The tenant's seccomp program is readable on FILTER_FD. */
  filtered?: boolean;
};

/** The namespaces every sandbox of a tenant's has of its own (network, IPC, host name), in the
 * inner sandbox and the intern's runtime (intern.ts) alike. */
export const PRIVATE_NAMESPACES = ['--unshare-net', '--unshare-ipc', '--unshare-uts'];

/** Whether this process would nest (an unprivileged uid, as inside an intern's runtime). */
export const nestedHere = (): boolean => process.getuid?.() !== 0;

/** The filter on FILTER_FD, and (nested) a user namespace that cannot make another. */
const filterArgs = (filtered: boolean, nested: boolean): string[] =>
  filtered ? [...(nested ? ['--disable-userns'] : []), '--seccomp', String(FILTER_FD)] : [];

export function bwrapArgv(opts: BwrapOptions): string[] {
  const nested = opts.nested ?? nestedHere();
  return [
    ...(nested ? ['--unshare-user'] : []),
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    ...(nested ? ['--ro-bind', '/proc', '/proc'] : ['--proc', '/proc', '--unshare-pid']),
    '--tmpfs',
    '/tmp',
    // After the tmpfs, so a work dir under /tmp is the real one, not hidden by it.
    '--bind',
    opts.workDir,
    opts.workDir,
    '--chdir',
    opts.workDir,
    ...PRIVATE_NAMESPACES,
    '--die-with-parent',
    ...filterArgs(opts.filtered ?? false, nested),
    // No --new-session: runShell starts bwrap in a session of its own, without a controlling
    // terminal to inject input into, and that session's group carries the agent's priority (a
    // second session would start at nice 0, src/shared/priority.ts).
    '--',
    opts.shell ?? '/bin/sh',
    '-c',
    opts.command,
  ];
}

/** Runs `argv` as it would run anyway (same files, network and processes) but under the filter on
 * FILTER_FD, in a user namespace of its own that can make no other, unless `userNamespaces` (an
 * agent that builds sandboxes of its own, as Codex does). For an unprivileged uid inside an
 * intern's runtime. */
export function confinedArgv(opts: { workDir: string; argv: string[]; userNamespaces?: boolean }): string[] {
  return [
    '--unshare-user',
    '--dev-bind',
    '/',
    '/',
    '--chdir',
    opts.workDir,
    '--die-with-parent',
    ...filterArgs(true, !opts.userNamespaces),
    '--',
    ...opts.argv,
  ];
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
export function userlandArgv(): string[] {
  return [
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    ...SYSTEM_ETC.flatMap((p) => ['--ro-bind-try', p, p]),
  ];
}
