// Local provisioner: each daemon runs on this machine, detached (it outlives the gateway), inside
// the intern's isolated runtime (src/runtime/sandbox/intern.ts): its own namespaces, disk image, uid
// and limits. The host side of an intern is `<data dir>/interns/<id>/` (daemon.log, disk.img, the
// disk's mount point, generated /etc files) and `<data dir>/run/i/<id>/` (the daemon's socket). Its
// secret reaches it on stdin, never in an environment or argv. This module assembles the units:
// launch.ts (command and environment), supervision.ts (start, stop), disk.ts, launchers.ts (what
// runs for an intern) and spare-claim.ts (warm spares).
// May import: src/shared, src/runtime/sandbox, ../daemon-client.ts (health), the modules of this folder, node built-ins.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { daemonHealthy } from '../daemon-client.ts';
import type { DaemonHandle, DaemonSpec, Provisioner } from './index.ts';
import { seccompProgram } from '../../../runtime/sandbox/seccomp.ts';
import { createUidPool, installationUidRange } from './uids.ts';
import { isolationProblem } from './check.ts';
import { packDisk, unpackDisk } from './files.ts';
import { waitForLine } from './daemon-log.ts';
import type { SparePool } from './spares.ts';
import { createDiskViews, internDisk, writeEtc } from './disk.ts';
import { baseEnv, internEnv, type IsolationOptions, sandboxCommand, sandboxEnv, unsandboxedCommand } from './launch.ts';
import { dirsOf, recordedPids, recordLauncher, releaseSpare } from './launchers.ts';
import { claimSpare, createWarmSpares, LISTENING, NSENTER, STEPS } from './spare-claim.ts';
import { alive, daemonInside, ours, spawnDaemon, stopLauncher } from './supervision.ts';

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

  const kill = (pid: number | null, dirs: string[]) => stopLauncher({ pid, dirs, isolated: iso.enabled });

  /** Stops the intern's launchers: the one given and (unless `alone`) those recorded for it (launchers.ts). */
  async function stop(intern: { id: string; pid: number | null; alone?: boolean }) {
    const dir = dirOf(intern.id);
    const pids = new Set([intern.pid, ...(intern.alone ? [] : recordedPids(dir))]);
    for (const pid of pids) await kill(pid, dirsOf(dir));
    releaseSpare(dir);
  }

  const views = createDiskViews({
    dirOf,
    uids,
    isolated: iso.enabled,
    diskMb: iso.diskMb,
    runningDaemon: ({ id, pid }) => (pid && alive(pid) && ours(pid, dirsOf(dirOf(id))) ? daemonInside(pid) : null),
  });

  function sandboxed(spec: DaemonSpec, dir: string): { file: string; args: string[]; env: Record<string, string> } {
    const problem = isolationProblem({ bwrapPath: iso.bwrapPath, diskMb: iso.diskMb });
    if (problem) throw new Error(problem);
    const uid = uids.claim(spec.internId);
    const { root, image } = internDisk(dir, iso.diskMb);
    const runDir = runDirOf(spec.internId);
    mkdirSync(runDir, { recursive: true, mode: 0o700 });
    rmSync(join(runDir, 'd.sock'), { force: true });
    const etc = writeEtc(join(dir, 'etc'), uid);
    const [file, args] = sandboxCommand({ iso, gatewaysDir, internRoot: root, diskImage: image, runDir, etc, uid });
    return { file, args, env: { ...sandboxEnv(iso), COHORT_AGENT_UID: String(uid) } };
  }

  const spares: SparePool | null =
    iso.enabled &&
    (opts.spares ?? 0) > 0 &&
    !isolationProblem({ bwrapPath: iso.bwrapPath, diskMb: iso.diskMb }) &&
    existsSync(NSENTER)
      ? createWarmSpares({
          iso,
          dataDir: opts.dataDir,
          gatewaysDir,
          size: opts.spares ?? 0,
          daemonEnv: opts.daemonEnv,
          startTimeoutMs: opts.startTimeoutMs,
          filter: runtimeFilter,
          kill: (pid, dir) => kill(pid, [dir]),
          onError: opts.onSpareError,
        })
      : null;

  /** A cold start: the daemon's launcher spawned here, recorded, and waited for until it listens and answers. */
  async function startCold(spec: DaemonSpec, onStep: Parameters<Provisioner['start']>[1]): Promise<DaemonHandle> {
    const dir = dirOf(spec.internId);
    const how = iso.enabled
      ? sandboxed(spec, dir)
      : unsandboxedCommand({ spec, dir, gatewaysDir, publicUrl: opts.publicUrl });
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
    // Recorded before the wait: a gateway that dies during the start leaves it for the one that takes the provision over.
    recordLauncher(dir, pid);
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
  }

  return {
    async start(spec, onStep): Promise<DaemonHandle> {
      const dir = dirOf(spec.internId);
      await onStep({ label: 'preparing the work directory', number: 1, total: STEPS });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      releaseSpare(dir);
      // The built-in agent can be handed its intern; any other agent starts as before.
      const spare = spec.agent.command ? null : spares?.take();
      if (spare) {
        try {
          return await claimSpare({
            spare,
            spec,
            onStep,
            internDir: dir,
            uids,
            diskMb: iso.diskMb,
            startTimeoutMs: opts.startTimeoutMs,
            // Only its own: a start that lost its intern to another gateway must not stop that one's.
            stop: () => stop({ id: spec.internId, pid: spare.pid, alone: true }),
          });
        } catch (err) {
          opts.onSpareError?.(
            `a warm spare could not take intern ${spec.internId}, starting one: ${(err as Error).message}`,
          );
        }
      }
      return startCold(spec, onStep);
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
      const view = await views.openView(intern, { write: false });
      if (!view) return { files: 0, bytes: 0, skipped: [] };
      mkdirSync(to, { recursive: true, mode: 0o700 });
      try {
        return await packDisk({ view: view.view, uid: view.uid, to });
      } finally {
        await view.release();
      }
    },
    openView: views.openView,
    async importFiles(internId, from) {
      const disk = await views.prepareDisk(internId);
      try {
        return await unpackDisk({ view: disk.view, uid: disk.uid, from });
      } finally {
        await disk.release();
      }
    },
    prepareDisk: views.prepareDisk,
  };
}
