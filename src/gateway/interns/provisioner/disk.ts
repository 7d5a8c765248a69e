// An intern's disk on the host: `<intern dir>/disk.img` (a sparse ext4 image, made once and kept
// across starts; COHORT_INTERN_DISK_MB sizes it) mounted on `<intern dir>/disk`, or that directory
// alone where disks are not images (0); the /etc files a sandbox binds for its uid; and views of
// the disk for the files API (files.ts), running or stopped.
// May import: src/runtime/sandbox (intern.ts), ./files.ts, ./uids.ts, ./index.ts (types), node built-ins.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { etcFiles, IN_SANDBOX } from '../../../runtime/sandbox/intern.ts';
import { hostView, mountImage, prepareFolders, viewIn } from './files.ts';
import type { InternView } from './index.ts';
import type { UidPool } from './uids.ts';

/** A sparse ext4 image whose root the launcher fills; made once, kept across starts. */
export function ensureDiskImage(file: string, mb: number): void {
  if (existsSync(file)) return;
  const tmp = `${file}.new`;
  writeFileSync(tmp, '', { mode: 0o600 });
  const r = spawnSync(
    '/usr/sbin/mkfs.ext4',
    ['-q', '-F', '-m', '5', '-E', 'lazy_itable_init=1,lazy_journal_init=1', tmp, `${mb}M`],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(
      `could not create the intern's disk image (mkfs.ext4: ${(r.stderr || r.error?.message || '').trim().slice(0, 200)}); install e2fsprogs, or set COHORT_INTERN_DISK_MB=0 to run without a disk limit`,
    );
  }
  spawnSync('/bin/mv', [tmp, file]);
}

/** The intern's disk on the host, made where missing: its directory, and its image where disks are images (`mb` > 0). */
export function internDisk(internDir: string, mb: number): { root: string; image: string | null } {
  const root = join(internDir, 'disk');
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const image = mb > 0 ? join(internDir, 'disk.img') : null;
  if (image) ensureDiskImage(image, mb);
  return { root, image };
}

/** /etc/passwd, group and hosts for a sandbox, written in place (a spare's are bound before its claim). */
export function writeEtc(etcDir: string, uid: number): { passwd: string; group: string; hosts: string } {
  mkdirSync(etcDir, { recursive: true, mode: 0o755 });
  const files = etcFiles(uid);
  const etc = { passwd: join(etcDir, 'passwd'), group: join(etcDir, 'group'), hosts: join(etcDir, 'hosts') };
  for (const k of ['passwd', 'group', 'hosts'] as const) {
    writeFileSync(etc[k], files[k]);
    // Readable by the intern's uid inside, whatever the gateway's umask.
    chmodSync(etc[k], 0o644);
  }
  return etc;
}

const none = async () => {};

/** The files API's ways into an intern's disk (Provisioner.openView and prepareDisk). */
export function createDiskViews(o: {
  dirOf: (id: string) => string;
  uids: UidPool;
  /** false: interns run unisolated, their files a plain directory owned by the gateway's user. */
  isolated: boolean;
  diskMb: number;
  /** The daemon of the intern's running sandbox, if it runs. */
  runningDaemon: (intern: { id: string; pid: number | null }) => number | null;
}) {
  /** See Provisioner.openView: the intern's disk as its own processes see it (files.ts). */
  async function openView(
    intern: { id: string; pid: number | null },
    { write }: { write: boolean },
  ): Promise<InternView | null> {
    const dir = o.dirOf(intern.id);
    if (!existsSync(dir)) return null;
    if (!o.isolated) return { view: hostView(dir), uid: null, release: none };
    // An intern holds a uid from its first start; files of one that never started are root's.
    const uid = o.uids.owned(intern.id) ?? 0;
    const daemon = o.runningDaemon(intern);
    // Running: its disk as its daemon sees it (the image is mounted only in the intern's namespace).
    if (daemon) return { view: viewIn(daemon, IN_SANDBOX.intern), uid, release: none };
    // Stopped, it is only read: a second read-write mount of its image beside a start would corrupt it.
    if (write) return null;
    const image = join(dir, 'disk.img');
    const plain = join(dir, 'disk');
    if (!existsSync(image) && !existsSync(plain)) return null;
    const mounted = await mountImage(existsSync(image) ? image : plain, plain, { readOnly: true });
    return { view: mounted.view, uid, release: mounted.release };
  }

  /** See Provisioner.prepareDisk. */
  async function prepareDisk(internId: string): Promise<InternView> {
    const dir = o.dirOf(internId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!o.isolated) return { view: hostView(dir), uid: null, release: none };
    const uid = o.uids.claim(internId);
    const disk = join(dir, 'disk');
    mkdirSync(disk, { recursive: true, mode: 0o700 });
    let view: InternView;
    if (o.diskMb === 0) view = { view: hostView(disk), uid, release: none };
    else {
      const image = join(dir, 'disk.img');
      ensureDiskImage(image, o.diskMb);
      const mounted = await mountImage(image, disk, { readOnly: false });
      view = { view: mounted.view, uid, release: mounted.release };
    }
    prepareFolders(view.view, uid);
    return view;
  }

  return { openView, prepareDisk };
}
