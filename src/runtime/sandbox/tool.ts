// The server tools' command sandbox (docs/isolation.md, "Server tools"), as a spec of bwrap.ts's
// builder: a uid of the interns' range without capabilities or groups and with no_new_privs, the
// interns' rlimits, its own user, PID, network (no loopback reachable: an empty namespace), IPC and
// UTS namespaces, a root of only the OS userland read-only and a memory-backed /work and /tmp of
// `diskMb` each, the tenant's seccomp filter (on FILTER_FD) over everything inside. What runs there
// is the runner of ./scripts/tool-runner.cjs, by the host's node. Pure but for reading that file,
// so tested as data (tool.test.ts); the gateway's server tools run it
// (src/gateway/inference/tools/sandbox.ts). Not exported from index.ts, like intern.ts: the
// bundled daemon and agent have no scripts/ beside them.
// May import: node built-ins, ./bwrap.ts.
import { readFileSync } from 'node:fs';
import { bwrapArgs, FILTER_FD, type Mount, nodePrefix, type SandboxSpec, USERLAND } from './bwrap.ts';

/** The runner, which `node -e` runs inside (the sandbox binds none of the project's files). */
const RUNNER = readFileSync(new URL('./scripts/tool-runner.cjs', import.meta.url), 'utf8');

export type ToolSandboxOptions = {
  bwrapPath: string;
  /** The uid of the interns' range claimed for this sandbox. */
  uid: number;
  limits: { processes: number; memoryMb: number; fileMb: number; openFiles: number };
  /** The size of /work, and of /tmp, each (COHORT_TOOL_SANDBOX_MB). */
  diskMb: number;
  /** The node that runs the runner (the host's: process.execPath). */
  nodePath: string;
};

/** The server tools' sandbox, as a spec of the builder. */
export function toolSpec(o: { diskMb: number; nodePath: string }): SandboxSpec {
  const bytes = o.diskMb * 1024 * 1024;
  const node = nodePrefix(o.nodePath);
  return {
    unshare: ['user', 'pid', 'private', 'cgroup'],
    hostname: 'sandbox',
    newSession: true,
    mounts: [
      ...USERLAND,
      ...(node ? [{ kind: 'bind', src: node, mode: 'ro' } satisfies Mount] : []),
      { kind: 'proc', dest: '/proc' },
      { kind: 'dev', dest: '/dev' },
      { kind: 'tmpfs', dest: '/tmp', bytes },
      { kind: 'tmpfs', dest: '/work', bytes },
    ],
    chdir: '/work',
    seccomp: { fd: FILTER_FD, disableUserns: true },
    command: [o.nodePath, '--max-old-space-size=64', '-e', RUNNER],
  };
}

/** The programs that start the sandbox: [file, args] for spawn, with the filter to write on FILTER_FD. */
export function toolSandboxCommand(o: ToolSandboxOptions): [string, string[]] {
  const mb = (n: number) => n * 1024 * 1024;
  return [
    '/usr/bin/setpriv',
    [
      `--reuid=${o.uid}`,
      `--regid=${o.uid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
      '/usr/bin/prlimit',
      `--nproc=${o.limits.processes}`,
      `--data=${mb(o.limits.memoryMb)}`,
      `--fsize=${mb(o.limits.fileMb)}`,
      `--nofile=${o.limits.openFiles}`,
      '--core=0',
      '--',
      o.bwrapPath,
      ...bwrapArgs(toolSpec(o)),
    ],
  ];
}
