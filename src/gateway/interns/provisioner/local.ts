// Local provisioner: each daemon runs on this machine, detached (it outlives the gateway), inside
// the intern's isolated runtime (runtime.ts): its own namespaces, disk image, uid and limits. The
// host side of an intern is `<data dir>/interns/<id>/` (daemon.log, disk.img, the disk's mount
// point, generated /etc files) and `<data dir>/run/i/<id>/` (the daemon's socket). Its secret
// reaches it on stdin, never in an environment or argv.
// May import: src/shared (daemon-protocol, entry, priority), ../daemon-client.ts (health), ./runtime, ./uids, node built-ins.
import { spawn, spawnSync, type StdioOptions } from 'node:child_process';
import type { Writable } from 'node:stream';
import { getPriority, setPriority } from 'node:os';
import {
  appendFileSync,
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startArgsFor } from '../../../shared/entry.ts';
import { setGroupPriority } from '../../../shared/priority.ts';
import { daemonHealthy } from '../daemon-client.ts';
import type { DaemonHandle, DaemonSpec, InternView, Provisioner, Step } from './index.ts';
import type { AgentLimits } from '../../../shared/daemon-protocol.ts';
import { CLAIM_SCRIPT, etcFiles, IN_SANDBOX, RUNTIME_FILTER_FD, runtimeCommand, runtimePathsFor } from './runtime.ts';
import { seccompProgram } from '../../../runtime/sandbox/seccomp.ts';
import { createUidPool, installationUidRange } from './uids.ts';
import { isolationProblem } from './check.ts';
import { hostView, mountImage, packDisk, prepareFolders, unpackDisk, viewIn } from './files.ts';
import { waitForLine } from './daemon-log.ts';
import { createSparePool, type Spare, type SparePool } from './spares.ts';

const STEPS = 3;
/** The line a daemon prints once it listens: its address. */
const LISTENING = /\{"listening":"((?:http:\/\/|unix:)[^"]+)"\}/;
/** An isolated intern's CPU priority once started: below the gateway, which stays responsive to everyone. */
const INTERN_NICE = 10;
/** A spare's priority until its claim: below every intern. */
const SPARE_NICE = 19;
/** util-linux's, which a claim runs in a spare's mount namespace (no nsenter: no spares). */
const NSENTER = '/usr/bin/nsenter';
/** A spare's /etc names this uid until its claim names the intern's. */
const NOBODY = 65534;
const PROJECT_ROOT = fileURLToPath(new URL('../../../../', import.meta.url)).replace(/\/$/, '');

export type IsolationOptions = {
  /** false only when the operator set COHORT_UNSAFE_NO_ISOLATION: daemons run as the gateway's own user. */
  enabled: boolean;
  bwrapPath: string;
  /** Size of each intern's disk image; 0: a plain directory without a size limit. */
  diskMb: number;
  tmpMb: number;
  /** The first of the interns' uids (COHORT_INTERN_UID_BASE); unset: the installation's own range (uids.ts). */
  uidBase?: number;
  uidCount: number;
  limits: AgentLimits;
  /** Whether a manual-mode escalation may be allowed at all (COHORT_ALLOW_ESCALATION). */
  allowEscalation: boolean;
  /** Whether interns get the gateway's egress proxy (COHORT_INTERN_EGRESS lists hosts). */
  egress: boolean;
};

export type LocalProvisionerOptions = {
  dataDir: string;
  /** Passed to the daemon: interaction deadline, replay buffer, log level. */
  daemonEnv?: Record<string, string>;
  startTimeoutMs?: number;
  isolation: IsolationOptions;
  /** COHORT_PUBLIC_URL: where agents reach the gateway when it is not on this host's sockets. */
  publicUrl?: string;
  /** Warm spares kept ready for wakes (COHORT_WARM_SPARES; isolated interns only); default none. */
  spares?: number;
  /** A spare that failed to start or to take its intern (the wake then starts one as before). */
  onSpareError?: (message: string) => void;
};

/** A minimal environment: nothing of the gateway's own (database URL, master key) reaches the intern. */
function baseEnv(isolated: boolean): Record<string, string> {
  const keep = isolated ? ['LANG', 'TZ'] : ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'NODE_OPTIONS'];
  const env = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));
  return isolated
    ? {
        ...env,
        PATH: '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
        HOME: `${IN_SANDBOX.intern}/home`,
        TMPDIR: '/tmp',
      }
    : env;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Guards against pid reuse: only signal a process whose command line names one of `dirs` (the
 * intern's directory, or the warm spare's it was started in). */
function ours(pid: number, dirs: string[]): boolean {
  try {
    const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return dirs.some((d) => line.includes(d));
  } catch {
    return alive(pid);
  }
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Sets every thread of the daemon inside the sandbox of launcher `pid`, and of its children (the
 * agent), to `threads`, and their session's group to `group`. A claimed spare is raised to a cold
 * start's (the gateway's threads, a new session's group at 0), a starved one to an intern's. */
function raiseSpare(pid: number, { threads, group }: { threads: number; group: number }): void {
  const daemon = daemonInside(pid);
  if (!daemon) return;
  void setGroupPriority(group, daemon);
  for (const p of [daemon, ...children(daemon)]) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {}
    for (const t of tids) {
      try {
        if (getPriority(Number(t)) > threads) setPriority(Number(t), threads);
      } catch {}
    }
  }
}

/** Runs a program to its end; its stderr becomes the error. */
function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += String(d)));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${file} failed (${code}): ${err.trim().slice(0, 300)}`)),
    );
  });
}

/** /etc/passwd, group and hosts for a sandbox, written in place (a spare's are bound before its claim). */
function writeEtc(etcDir: string, uid: number): { passwd: string; group: string; hosts: string } {
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

/** Starts a daemon's launcher detached (it outlives the gateway), its output appended to `logFile`,
 * its stdin a pipe (for the secret, or a spare's assignment); `state.exited` follows its end. */
function spawnDaemon(o: {
  file: string;
  args: string[];
  cwd: string;
  logFile: string;
  env: Record<string, string>;
  /** A sandbox's seccomp program, for the launcher to pass bubblewrap on RUNTIME_FILTER_FD. */
  filter?: Buffer;
}) {
  const out = openSync(o.logFile, 'a', 0o600);
  const stdio: StdioOptions = o.filter ? ['pipe', out, out, 'ignore', 'pipe'] : ['pipe', out, out];
  const child = spawn(o.file, o.args, { cwd: o.cwd, detached: true, stdio, env: o.env });
  closeSync(out);
  if (o.filter) {
    const pipe = child.stdio[RUNTIME_FILTER_FD] as Writable;
    pipe.on('error', () => {});
    pipe.end(o.filter);
  }
  const state = { exited: false };
  child.on('exit', () => (state.exited = true));
  child.on('error', () => (state.exited = true));
  child.stdin!.on('error', () => {});
  child.unref();
  return { pid: child.pid ?? null, stdin: child.stdin!, state };
}

/** The daemon inside a sandbox whose launcher is `pid`: launcher → bwrap → bwrap's init (pid 1 inside) → daemon. */
function daemonInside(pid: number): number | null {
  let p: number | undefined = pid;
  for (let depth = 0; depth < 3 && p !== undefined; depth++) p = children(p)[0];
  return p ?? null;
}

/** A sparse ext4 image whose root the launcher fills; made once, kept across starts. */
function ensureDiskImage(file: string, mb: number): void {
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

export function createLocalProvisioner(opts: LocalProvisionerOptions): Provisioner {
  const iso = opts.isolation;
  const dirOf = (id: string) => join(opts.dataDir, 'interns', id);
  const runDirOf = (id: string) => join(opts.dataDir, 'run', 'i', id);
  const gatewaysDir = join(opts.dataDir, 'run', 'gw');
  const range = iso.enabled
    ? installationUidRange({ dataDir: opts.dataDir, base: iso.uidBase, count: iso.uidCount })
    : { base: 0, count: 0 };
  const uids = createUidPool({ dir: join(opts.dataDir, 'run', 'uids'), base: range.base, size: range.count });
  /** Every isolated intern's processes run under it (runtime/sandbox/seccomp.ts). */
  const runtimeFilter = iso.enabled ? seccompProgram('runtime') : undefined;

  /** The warm spare an intern's daemon was started in, if it was (spares.ts): recorded in its directory. */
  const spareFileOf = (id: string) => join(dirOf(id), 'spare');
  const spareOf = (id: string): string | null => {
    try {
      return readFileSync(spareFileOf(id), 'utf8').trim() || null;
    } catch {
      return null;
    }
  };
  /** The host directories an intern's launcher names: its own, and its spare's. */
  const dirsOf = (id: string) => [dirOf(id), spareOf(id)].filter((d): d is string => d !== null);

  /** Once a spare's intern has stopped: its log joins the intern's, and the spare's directory goes. */
  function releaseSpare(id: string): void {
    const spare = spareOf(id);
    if (!spare) return;
    let pid = 0;
    try {
      pid = Number(readFileSync(join(spare, 'pid'), 'utf8'));
    } catch {}
    if (pid && alive(pid) && ours(pid, [spare])) return;
    try {
      appendFileSync(join(dirOf(id), 'daemon.log'), readFileSync(join(spare, 'daemon.log')), { mode: 0o600 });
    } catch {}
    rmSync(spare, { recursive: true, force: true });
    rmSync(spareFileOf(id), { force: true });
  }

  /** Where a cold start records its launcher, before it waits for the daemon: a gateway that
   * dies during the start leaves it there for the one that takes the provision over. */
  const launcherFileOf = (id: string) => join(dirOf(id), 'launcher.pid');

  /** The launchers recorded for the intern: its cold start's, and its spare's. */
  function recordedPids(id: string): number[] {
    const files = [launcherFileOf(id), ...(spareOf(id) ? [join(spareOf(id)!, 'pid')] : [])];
    return files.flatMap((f) => {
      try {
        const pid = Number(readFileSync(f, 'utf8'));
        return pid > 0 ? [pid] : [];
      } catch {
        return [];
      }
    });
  }

  async function stop(intern: { id: string; pid: number | null; alone?: boolean }) {
    const pids = new Set([intern.pid, ...(intern.alone ? [] : recordedPids(intern.id))]);
    for (const pid of pids) await kill(pid, dirsOf(intern.id));
    releaseSpare(intern.id);
  }

  async function kill(pid: number | null, dirs: string[]) {
    if (!pid || !alive(pid) || !ours(pid, dirs)) return;
    // The daemon alone first: it cancels its runs and waits for its agent to confirm, so open
    // streams end `run_ended`. Inside a sandbox it is bwrap's grandchild.
    const daemon = iso.enabled ? daemonInside(pid) : pid;
    try {
      if (daemon) process.kill(daemon, 'SIGTERM');
    } catch {}
    for (let i = 0; i < 100 && alive(pid) && (daemon === null || alive(daemon)); i++) await sleep(50);
    // Then the rest: killing the launcher kills bwrap (--die-with-parent) and so its PID namespace,
    // every process the intern started with it; unsandboxed, its process group. The namespace's
    // init (bwrap's inner process) exits only once the kernel has reaped all of them, which under
    // load comes a moment after the launcher is gone: the stop is done when both are. An intern's
    // processes run at a lower priority, so on a busy host a killed one may wait seconds for the
    // CPU it needs to exit: up to 10 s, not the 2 s that a suite loaded to 15 on two cores outran.
    const init = iso.enabled ? (children(children(pid)[0] ?? 0)[0] ?? null) : null;
    try {
      process.kill(iso.enabled ? pid : -pid, 'SIGKILL');
    } catch {}
    for (let i = 0; i < 500 && (alive(pid) || (init !== null && alive(init))); i++) await sleep(20);
  }

  /** See Provisioner.openView: the intern's disk as its own processes see it (files.ts). */
  async function openView(
    intern: { id: string; pid: number | null },
    o: { write: boolean },
  ): Promise<InternView | null> {
    const dir = dirOf(intern.id);
    const none = async () => {};
    if (!existsSync(dir)) return null;
    if (!iso.enabled) return { view: hostView(dir), uid: null, release: none };
    // An intern holds a uid from its first start; files of one that never started are root's.
    const uid = uids.owned(intern.id) ?? 0;
    const daemon =
      intern.pid && alive(intern.pid) && ours(intern.pid, dirsOf(intern.id)) ? daemonInside(intern.pid) : null;
    // Running: its disk as its daemon sees it (the image is mounted only in the intern's namespace).
    if (daemon) return { view: viewIn(daemon, IN_SANDBOX.intern), uid, release: none };
    // Stopped, it is only read: a second read-write mount of its image beside a start would corrupt it.
    if (o.write) return null;
    const image = join(dir, 'disk.img');
    const plain = join(dir, 'disk');
    if (!existsSync(image) && !existsSync(plain)) return null;
    const mounted = await mountImage(existsSync(image) ? image : plain, plain, { readOnly: true });
    return { view: mounted.view, uid, release: mounted.release };
  }

  /** See Provisioner.prepareDisk. */
  async function prepareDisk(internId: string): Promise<InternView> {
    const dir = dirOf(internId);
    const none = async () => {};
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!iso.enabled) return { view: hostView(dir), uid: null, release: none };
    const uid = uids.claim(internId);
    const disk = join(dir, 'disk');
    mkdirSync(disk, { recursive: true, mode: 0o700 });
    let view: InternView;
    if (iso.diskMb === 0) view = { view: hostView(disk), uid, release: none };
    else {
      const image = join(dir, 'disk.img');
      ensureDiskImage(image, iso.diskMb);
      const mounted = await mountImage(image, disk, { readOnly: false });
      view = { view: mounted.view, uid, release: mounted.release };
    }
    prepareFolders(view.view, uid);
    return view;
  }

  /** The command that starts a sandbox on `internRoot` (a spare's: uid null, see runtime.ts). */
  function sandboxCommand(o: {
    internRoot: string;
    diskImage: string | null;
    runDir: string;
    etc: { passwd: string; group: string; hosts: string };
    uid: number | null;
  }): [string, string[]] {
    const nodeArgs = startArgsFor(import.meta.url, '../../../runtime/daemon/main');
    const code = ['dist', 'src', 'node_modules', 'package.json', 'tsconfig.json']
      .map((p) => join(PROJECT_ROOT, p))
      .filter((p) => existsSync(p));
    mkdirSync(gatewaysDir, { recursive: true, mode: 0o700 });
    return runtimeCommand({
      ...o,
      bwrapPath: iso.bwrapPath,
      gatewaysDir,
      runtimePaths: runtimePathsFor({ execPath: process.execPath, codePaths: code }),
      tmpBytes: iso.tmpMb * 1024 * 1024,
      command: [process.execPath, ...nodeArgs],
    });
  }

  /** The isolated daemon's settings that are the installation's, not its intern's (a spare has them from its start). */
  const sandboxEnv = (): Record<string, string> => ({
    COHORT_INTERN_DIR: IN_SANDBOX.intern,
    COHORT_DAEMON_SOCKET: IN_SANDBOX.daemonSocket,
    COHORT_GATEWAY_SOCKETS: IN_SANDBOX.gateways,
    COHORT_AGENT_LIMITS: JSON.stringify(iso.limits),
    COHORT_INTERN_EGRESS_PROXY: iso.egress ? '1' : '0',
    COHORT_ALLOW_ESCALATION: iso.allowEscalation ? '1' : '0',
    COHORT_DAEMON_NICE: String(INTERN_NICE),
  });

  /** The daemon's settings that are its intern's. */
  const internEnv = (spec: DaemonSpec): Record<string, string> => ({
    COHORT_INTERN_ID: spec.internId,
    COHORT_AGENT_API_KEY: spec.apiKey,
    COHORT_AGENT_MODEL: spec.model,
    COHORT_AGENT_INSTRUCTIONS: spec.instructions,
    ...(spec.agent.command ? { COHORT_AGENT_COMMAND: JSON.stringify(spec.agent.command) } : {}),
    COHORT_AGENT_ENV: JSON.stringify(spec.agent.env),
    COHORT_AGENT_MODES: JSON.stringify(spec.agent.modes),
    ...(spec.agent.userNamespaces ? { COHORT_AGENT_USER_NAMESPACES: '1' } : {}),
  });

  /** The intern's disk on the host: its directory, and its image where disks are images. */
  function disk(dir: string): { root: string; image: string | null } {
    const root = join(dir, 'disk');
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const image = iso.diskMb > 0 ? join(dir, 'disk.img') : null;
    if (image) ensureDiskImage(image, iso.diskMb);
    return { root, image };
  }

  function sandboxed(spec: DaemonSpec, dir: string): { file: string; args: string[]; env: Record<string, string> } {
    const problem = isolationProblem({ bwrapPath: iso.bwrapPath, diskMb: iso.diskMb });
    if (problem) throw new Error(problem);
    const uid = uids.claim(spec.internId);
    const { root, image } = disk(dir);
    const runDir = runDirOf(spec.internId);
    mkdirSync(runDir, { recursive: true, mode: 0o700 });
    rmSync(join(runDir, 'd.sock'), { force: true });
    const etc = writeEtc(join(dir, 'etc'), uid);
    const [file, args] = sandboxCommand({ internRoot: root, diskImage: image, runDir, etc, uid });
    return { file, args, env: { ...sandboxEnv(), COHORT_AGENT_UID: String(uid) } };
  }

  const spares: SparePool | null =
    iso.enabled &&
    (opts.spares ?? 0) > 0 &&
    !isolationProblem({ bwrapPath: iso.bwrapPath, diskMb: iso.diskMb }) &&
    existsSync(NSENTER)
      ? createSparePool({
          size: opts.spares ?? 0,
          dir: join(opts.dataDir, 'run', 'spares'),
          kill: (pid, dir) => kill(pid, [dir]),
          startTimeoutMs: opts.startTimeoutMs,
          onError: opts.onSpareError,
          // Its start starved by the interns' work: it then starts at theirs, not never.
          onSlow: (spare) => raiseSpare(spare.pid, { threads: INTERN_NICE, group: INTERN_NICE }),
          launch({ dir, logFile }) {
            const etc = writeEtc(join(dir, 'etc'), NOBODY);
            const [file, args] = sandboxCommand({
              internRoot: join(dir, 'intern'),
              diskImage: null,
              runDir: join(dir, 'run'),
              etc,
              uid: null,
            });
            // At the lowest priority while it starts and waits, so it uses only time no intern
            // wants (unless that starves its start: onSlow); its claim raises it for the wake.
            const started = spawnDaemon({
              file: '/usr/bin/nice',
              args: ['-n', String(SPARE_NICE), file, ...args],
              cwd: dir,
              logFile,
              env: { ...baseEnv(true), ...opts.daemonEnv, ...sandboxEnv(), COHORT_DAEMON_SPARE: '1' },
              filter: runtimeFilter,
            });
            if (!started.pid) throw new Error('could not start a spare sandbox');
            return { ...started, pid: started.pid };
          },
        })
      : null;

  /** Starts an intern in a warm spare: its disk mounted under the spare's /intern, its uid's /etc
   * files, then its settings and secret on the spare daemon's stdin. */
  async function claim(spare: Spare, spec: DaemonSpec, onStep: (s: Step) => Promise<void>): Promise<DaemonHandle> {
    const dir = dirOf(spec.internId);
    // Recorded first: from here on, stop() knows this launcher as the intern's.
    writeFileSync(spareFileOf(spec.internId), spare.dir, { mode: 0o600 });
    try {
      const uid = uids.claim(spec.internId);
      const { root, image } = disk(dir);
      writeEtc(join(spare.dir, 'etc'), uid);
      await onStep({ label: 'starting the daemon', number: 2, total: STEPS });
      const ns = `--mount=/proc/${spare.pid}/ns/mnt`;
      const mnt = join(spare.dir, 'intern');
      await run(NSENTER, [
        ns,
        '--',
        '/bin/sh',
        '-c',
        CLAIM_SCRIPT,
        'cohort-claim',
        image ?? '',
        root,
        mnt,
        String(uid),
      ]);
      raiseSpare(spare.pid, { threads: getPriority(), group: 0 });
      const from = statSync(spare.logFile).size;
      const env = { ...internEnv(spec), COHORT_AGENT_UID: String(uid) };
      spare.stdin.end(`${JSON.stringify({ secret: spec.secret, env })}\n`);
      await waitForLine({
        logFile: spare.logFile,
        from,
        pattern: LISTENING,
        child: spare.state,
        timeoutMs: opts.startTimeoutMs ?? 20_000,
      });
      const address = `unix:${join(spare.dir, 'run', 'd.sock')}`;
      await onStep({ label: 'waiting for the daemon to be healthy', number: 3, total: STEPS });
      if (!(await daemonHealthy(address, 5_000))) throw new Error('the daemon did not answer its health check');
      return { hostname: address, pid: spare.pid };
    } catch (err) {
      // Only its own: a start that lost its intern to another gateway must not stop that one's.
      await stop({ id: spec.internId, pid: spare.pid, alone: true });
      throw err;
    }
  }

  function unsandboxed(spec: DaemonSpec, dir: string): { file: string; args: string[]; env: Record<string, string> } {
    return {
      file: process.execPath,
      args: [...startArgsFor(import.meta.url, '../../../runtime/daemon/main'), '--dir', dir],
      // Like an isolated daemon it reaches whichever gateway runs on this host through the gateways'
      // sockets, so a gateway restarted on another port does not strand it; an operator's public URL
      // (a gateway elsewhere) is used as given.
      env: {
        COHORT_INTERN_DIR: dir,
        COHORT_DAEMON_HOST: '127.0.0.1',
        COHORT_DAEMON_PORT: '0',
        ...(opts.publicUrl ? { COHORT_AGENT_BASE_URL: spec.gatewayUrl } : { COHORT_GATEWAY_SOCKETS: gatewaysDir }),
      },
    };
  }

  return {
    async start(spec: DaemonSpec, onStep): Promise<DaemonHandle> {
      const dir = dirOf(spec.internId);
      await onStep({ label: 'preparing the work directory', number: 1, total: STEPS });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      releaseSpare(spec.internId);
      // The built-in agent can be handed its intern; any other agent starts as before.
      const spare = spec.agent.command ? null : spares?.take();
      if (spare) {
        try {
          return await claim(spare, spec, onStep);
        } catch (err) {
          opts.onSpareError?.(
            `a warm spare could not take intern ${spec.internId}, starting one: ${(err as Error).message}`,
          );
        }
      }
      const how = iso.enabled ? sandboxed(spec, dir) : unsandboxed(spec, dir);
      const logFile = join(dir, 'daemon.log');
      const from = existsSync(logFile) ? readFileSync(logFile).length : 0;
      await onStep({ label: 'starting the daemon', number: 2, total: STEPS });
      const { pid, stdin, state } = spawnDaemon({
        file: how.file,
        args: how.args,
        cwd: dir,
        logFile,
        env: {
          ...baseEnv(iso.enabled),
          ...opts.daemonEnv,
          COHORT_ALLOW_ESCALATION: iso.allowEscalation ? '1' : '0',
          ...how.env,
          COHORT_DAEMON_SECRET_STDIN: '1',
          ...internEnv(spec),
        },
        ...(iso.enabled ? { filter: runtimeFilter } : {}),
      });
      stdin.end(`${spec.secret}\n`);
      writeFileSync(launcherFileOf(spec.internId), String(pid), { mode: 0o600 });
      try {
        const reported = await waitForLine({
          logFile,
          from,
          pattern: LISTENING,
          child: state,
          timeoutMs: opts.startTimeoutMs ?? 20_000,
        });
        // Inside the sandbox the daemon names its socket by its own path; the gateway reaches it here.
        const address = iso.enabled ? `unix:${join(runDirOf(spec.internId), 'd.sock')}` : reported;
        await onStep({ label: 'waiting for the daemon to be healthy', number: 3, total: STEPS });
        if (!(await daemonHealthy(address, 5_000))) throw new Error('the daemon did not answer its health check');
        return { hostname: address, pid };
      } catch (err) {
        await stop({ id: spec.internId, pid, alone: true });
        throw err;
      }
    },
    stop,
    close: async () => spares?.close(),
    async destroy(intern) {
      await stop(intern);
      rmSync(dirOf(intern.id), { recursive: true, force: true });
      rmSync(runDirOf(intern.id), { recursive: true, force: true });
      uids.release(intern.id);
    },
    healthy: (hostname) => daemonHealthy(hostname),
    async exportFiles(intern, to) {
      const view = await openView(intern, { write: false });
      if (!view) return { files: 0, bytes: 0, skipped: [] };
      mkdirSync(to, { recursive: true, mode: 0o700 });
      try {
        return await packDisk({ view: view.view, uid: view.uid, to });
      } finally {
        await view.release();
      }
    },
    openView,
    async importFiles(internId, from) {
      const disk = await prepareDisk(internId);
      try {
        return await unpackDisk({ view: disk.view, uid: disk.uid, from });
      } finally {
        await disk.release();
      }
    },
    prepareDisk,
  };
}
