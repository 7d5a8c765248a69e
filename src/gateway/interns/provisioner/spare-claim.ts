// Warm spares for isolated interns (spares.ts keeps the pool): how a spare's sandbox starts (no
// intern, at the lowest priority), and how a wake claims one: the intern's disk mounted under the
// spare's /intern (src/runtime/sandbox/scripts/claim.sh), its uid's /etc files, then its settings
// and secret on the spare daemon's stdin.
// May import: src/runtime/sandbox (intern.ts), ../daemon-client.ts (health), ./daemon-log.ts, ./disk.ts,
// ./launch.ts, ./launchers.ts, ./spares.ts, ./supervision.ts, ./uids.ts, ./index.ts (types), node built-ins.
import { statSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { CLAIM_SCRIPT } from '../../../runtime/sandbox/intern.ts';
import { daemonHealthy } from '../daemon-client.ts';
import { waitForLine } from './daemon-log.ts';
import { internDisk, writeEtc } from './disk.ts';
import type { DaemonHandle, DaemonSpec, Step } from './index.ts';
import {
  baseEnv,
  INTERN_NICE,
  internEnv,
  type IsolationOptions,
  SPARE_NICE,
  sandboxCommand,
  sandboxEnv,
} from './launch.ts';
import { recordSpare } from './launchers.ts';
import { createSparePool, type Spare, type SparePool } from './spares.ts';
import { raiseSpare, run, spawnDaemon } from './supervision.ts';
import type { UidPool } from './uids.ts';

/** util-linux's, which a claim runs in a spare's mount namespace (no nsenter: no spares). */
export const NSENTER = '/usr/bin/nsenter';
/** A spare's /etc names this uid until its claim names the intern's. */
const NOBODY = 65534;
/** The line a daemon prints once it listens: its address. */
export const LISTENING = /\{"listening":"((?:http:\/\/|unix:)[^"]+)"\}/;
export const STEPS = 3;

/** The pool of warm spares, started in `<data dir>/run/spares`. */
export function createWarmSpares(o: {
  iso: IsolationOptions;
  dataDir: string;
  gatewaysDir: string;
  size: number;
  daemonEnv?: Record<string, string>;
  startTimeoutMs?: number;
  /** The runtime's seccomp program (src/runtime/sandbox/seccomp.ts). */
  filter?: Buffer;
  kill: (pid: number, dir: string) => Promise<void>;
  onError?: (message: string) => void;
}): SparePool {
  return createSparePool({
    size: o.size,
    dir: join(o.dataDir, 'run', 'spares'),
    kill: o.kill,
    startTimeoutMs: o.startTimeoutMs,
    onError: o.onError,
    // Its start starved by the interns' work: it then starts at theirs, not never.
    onSlow: (spare) => raiseSpare(spare.pid, { threads: INTERN_NICE, group: INTERN_NICE }),
    launch({ dir, logFile }) {
      const etc = writeEtc(join(dir, 'etc'), NOBODY);
      const [file, args] = sandboxCommand({
        iso: o.iso,
        gatewaysDir: o.gatewaysDir,
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
        env: { ...baseEnv(true), ...o.daemonEnv, ...sandboxEnv(o.iso), COHORT_DAEMON_SPARE: '1' },
        filter: o.filter,
      });
      if (!started.pid) throw new Error('could not start a spare sandbox');
      return { ...started, pid: started.pid };
    },
  });
}

/** Starts an intern in a warm spare: its disk mounted under the spare's /intern, its uid's /etc
 * files, then its settings and secret on the spare daemon's stdin. On failure `stop` ends the
 * spare (only it: a start that lost its intern to another gateway must not stop that one's). */
export async function claimSpare(o: {
  spare: Spare;
  spec: DaemonSpec;
  onStep: (s: Step) => Promise<void>;
  internDir: string;
  uids: UidPool;
  diskMb: number;
  startTimeoutMs?: number;
  stop: () => Promise<void>;
}): Promise<DaemonHandle> {
  const { spare, spec } = o;
  // Recorded first: from here on, a stop knows this launcher as the intern's.
  recordSpare(o.internDir, spare.dir);
  try {
    const uid = o.uids.claim(spec.internId);
    const { root, image } = internDisk(o.internDir, o.diskMb);
    writeEtc(join(spare.dir, 'etc'), uid);
    await o.onStep({ label: 'starting the daemon', number: 2, total: STEPS });
    const ns = `--mount=/proc/${spare.pid}/ns/mnt`;
    const mnt = join(spare.dir, 'intern');
    await run(NSENTER, [ns, '--', '/bin/sh', '-c', CLAIM_SCRIPT, 'cohort-claim', image ?? '', root, mnt, String(uid)]);
    raiseSpare(spare.pid, { threads: getPriority(), group: 0 });
    const from = statSync(spare.logFile).size;
    const env = { ...internEnv(spec), COHORT_AGENT_UID: String(uid) };
    spare.stdin.end(`${JSON.stringify({ secret: spec.secret, env })}\n`);
    await waitForLine({
      logFile: spare.logFile,
      from,
      pattern: LISTENING,
      child: spare.state,
      timeoutMs: o.startTimeoutMs ?? 20_000,
    });
    const address = `unix:${join(spare.dir, 'run', 'd.sock')}`;
    await o.onStep({ label: 'waiting for the daemon to be healthy', number: 3, total: STEPS });
    if (!(await daemonHealthy(address, 5_000))) throw new Error('the daemon did not answer its health check');
    return { hostname: address, pid: spare.pid };
  } catch (err) {
    await o.stop();
    throw err;
  }
}
