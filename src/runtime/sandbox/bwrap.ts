// Bubblewrap argv for manual mode's inner sandbox: read-only root, private /tmp, writable work
// dir, no network (not even loopback: --unshare-net leaves the sandbox its own, empty network
// namespace). Inside an isolated intern runtime the agent is an unprivileged uid, so the sandbox
// nests through a user namespace and reuses the runtime's own /proc (a fresh one cannot be
// mounted there); as root on a bare host it gets its own PID namespace and /proc.
// Pure, so it is tested as data.
export const BWRAP_PATH = '/usr/bin/bwrap';

export type BwrapOptions = { workDir: string; command: string; shell?: string; nested?: boolean };

/** Whether this process would nest (an unprivileged uid, as inside an intern's runtime). */
export const nestedHere = (): boolean => process.getuid?.() !== 0;

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
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    // No --new-session: runShell starts bwrap in a session of its own, without a controlling
    // terminal to inject input into, and that session's group carries the agent's priority (a
    // second session would start at nice 0, src/shared/priority.ts).
    '--',
    opts.shell ?? '/bin/sh',
    '-c',
    opts.command,
  ];
}
