// Bubblewrap argv: read-only root, private /tmp, writable work dir, no network (not even loopback:
// --unshare-net leaves the sandbox its own, empty network namespace). Pure, so it is tested as data.
export const BWRAP_PATH = '/usr/bin/bwrap';

export type BwrapOptions = { workDir: string; command: string; shell?: string };

export function bwrapArgv(opts: BwrapOptions): string[] {
  return [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    // After the tmpfs, so a work dir under /tmp is the real one, not hidden by it.
    '--bind', opts.workDir, opts.workDir,
    '--chdir', opts.workDir,
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--new-session',
    '--',
    opts.shell ?? '/bin/sh', '-c', opts.command,
  ];
}
