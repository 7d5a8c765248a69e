// A command the gateway runs for an intern where the intern's own shell runs (git bundle,
// files.ts): in every namespace of its running sandbox (mount, PID, network, IPC, UTS), as its
// uid, without capabilities, with no_new_privs, and under the tenant's seccomp filter
// (runtime/sandbox/seccomp.ts) in a user namespace that can make no other, as bubblewrap gives
// every command a tenant runs (runtime/sandbox/bwrap.ts, confinedArgv). nsenter from the host
// inherits none of the sandbox's filters, so the filter is loaded again here: whatever the
// tenant's repository makes the command run reaches nothing the intern's shell cannot
// (docs/isolation.md, "System calls"). Pure but for the filter's bytes, made once.
// May import: node built-ins, src/shared (spawner's Job), runtime/sandbox (bwrap argv, seccomp).
import { BWRAP_PATH, confinedArgv } from '../../../runtime/sandbox/bwrap.ts';
import { seccompProgram } from '../../../runtime/sandbox/seccomp.ts';
import type { Job } from '../../../shared/spawner.ts';

const NSENTER = '/usr/bin/nsenter';

let filter: string | undefined;
/** The tenant's seccomp program, base64, for the spawner's fd3 (bwrap.ts's FILTER_FD). */
const tenantFilter = () => (filter ??= seccompProgram('tenant').toString('base64'));

/** The job that runs `argv` in the sandbox of process `ns` (a process inside it, its daemon), in
 * `cwd` there, as `uid`, with `env` only (besides the spawner's PATH and LANG), files it writes
 * bounded to `maxFileBytes`, killed after `timeoutMs`. */
export function tenantJob(o: {
  ns: number;
  cwd: string;
  uid: number;
  env: Record<string, string>;
  argv: string[];
  maxFileBytes: number;
  timeoutMs: number;
}): Job {
  const env = Object.entries(o.env).map(([k, v]) => `${k}=${v}`);
  const args = [
    `--target=${o.ns}`,
    '--mount',
    '--pid',
    '--net',
    '--ipc',
    '--uts',
    `--wdns=${o.cwd}`,
    `--setuid=${o.uid}`,
    `--setgid=${o.uid}`,
    '--',
    '/usr/bin/setpriv',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
    '/usr/bin/prlimit',
    `--fsize=${o.maxFileBytes}`,
    '--',
    BWRAP_PATH,
    ...confinedArgv({ workDir: o.cwd, argv: ['/usr/bin/env', ...env, ...o.argv] }),
  ];
  return { file: NSENTER, args, cwd: '/', fd3: tenantFilter(), timeoutMs: o.timeoutMs };
}
