// An intern's files from the host's side, for backup and restore: a running intern's disk is read
// through its daemon's own view (/proc/<pid>/root), a stopped one's image is mounted by a helper
// process in a private mount namespace and reached the same way. Only regular files, directories
// and symlinks (as links) are copied; ownership is the launcher's to set at the next start.
// May import: node built-ins.
import { spawn } from 'node:child_process';
import { copyFileSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { FileCount } from './index.ts';

/** The directories of an intern's disk that hold its state (daemon/: sessions map; agent/: conversations). */
export const DISK_DIRS = ['daemon', 'agent', 'work', 'home'];

/** Copies `from` into `to` recursively; returns what it copied. */
export function copyTree(from: string, to: string): FileCount {
  const count = { files: 0, bytes: 0 };
  const walk = (src: string, dst: string) => {
    mkdirSync(dst, { recursive: true, mode: 0o755 });
    for (const e of readdirSync(src, { withFileTypes: true })) {
      const s = join(src, e.name);
      const d = join(dst, e.name);
      if (e.isDirectory()) walk(s, d);
      else if (e.isSymbolicLink()) symlinkSync(readlinkSync(s), d);
      else if (e.isFile()) {
        copyFileSync(s, d);
        count.files++;
        count.bytes += lstatSync(s).size;
      }
    }
  };
  walk(from, to);
  return count;
}

/** Copies the state directories of a disk rooted at `root` into `to` (or from `from` into a disk). */
export function copyDisk(root: string, to: string): FileCount {
  const total = { files: 0, bytes: 0 };
  for (const d of DISK_DIRS) {
    try {
      if (!lstatSync(join(root, d)).isDirectory()) continue;
    } catch {
      continue;
    }
    const c = copyTree(join(root, d), join(to, d));
    total.files += c.files;
    total.bytes += c.bytes;
  }
  return total;
}

/** Mounts a disk image in a private mount namespace held by a helper process; `root` reaches it. */
export async function mountImage(
  image: string,
  mountPoint: string,
): Promise<{ root: string; release(): Promise<void> }> {
  const script = 'mount -o loop,nosuid,nodev "$1" "$2" && echo mounted && exec sleep 86400';
  const child = spawn(
    '/usr/bin/unshare',
    ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'cohort-mount', image, mountPoint],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) =>
      reject(new Error(`could not mount the intern's disk ${image} (${err.trim() || `exit ${code}`})`)),
    );
  });
  return {
    root: `/proc/${child.pid}/root${mountPoint}`,
    release: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
