// Whether this host can isolate interns, and if not, what to do about it in words: provisioning
// fails with this message (the intern's last_failure_message) rather than run anything unisolated.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const UNSAFE_HINT =
  "or, knowing every intern then runs with the gateway's own privileges, set COHORT_UNSAFE_NO_ISOLATION=1";
const cache = new Map<string, string | null>();

export function isolationProblem(o: { bwrapPath: string; diskMb: number }): string | null {
  const key = `${o.bwrapPath}:${o.diskMb > 0}`;
  if (!cache.has(key)) cache.set(key, probe(o));
  return cache.get(key)!;
}

function probe(o: { bwrapPath: string; diskMb: number }): string | null {
  if (process.getuid?.() !== 0)
    return `isolating interns needs the gateway to run as root (each intern gets a uid, namespaces and a disk of its own); run it as root, ${UNSAFE_HINT}`;
  if (!existsSync(o.bwrapPath))
    return `bubblewrap is not installed (${o.bwrapPath}): install the Debian package bubblewrap (apt-get install bubblewrap), ${UNSAFE_HINT}`;
  if (!existsSync('/usr/bin/unshare'))
    return `util-linux's unshare is missing (/usr/bin/unshare): install the Debian package util-linux, ${UNSAFE_HINT}`;
  const r = spawnSync(
    o.bwrapPath,
    ['--unshare-pid', '--unshare-net', '--unshare-ipc', '--ro-bind', '/', '/', '--proc', '/proc', '--', '/bin/true'],
    { encoding: 'utf8' },
  );
  if (r.status !== 0)
    return `bubblewrap cannot create namespaces on this host (${(r.stderr || r.error?.message || '').trim().slice(0, 200)}); allow user, PID and network namespaces, ${UNSAFE_HINT}`;
  if (o.diskMb > 0 && (!existsSync('/dev/loop-control') || !existsSync('/usr/sbin/mkfs.ext4'))) {
    return "each intern's disk is a size-limited image, which needs loop devices (/dev/loop-control) and mkfs.ext4 (Debian package e2fsprogs); provide them, or set COHORT_INTERN_DISK_MB=0 to run interns without a disk limit";
  }
  return null;
}
