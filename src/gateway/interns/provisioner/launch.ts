// What a daemon starts with: its command line (inside the intern's runtime, src/runtime/sandbox/intern.ts,
// or unsandboxed) and its environment, split into the installation's settings (which a warm spare
// has from its start) and its intern's (which a claim hands it). Nothing of the gateway's own
// environment (database URL, master key) reaches an intern.
// May import: src/shared (entry, daemon-protocol), src/runtime/sandbox (intern.ts), ./index.ts (types), node built-ins.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startArgsFor } from '../../../shared/entry.ts';
import type { AgentLimits } from '../../../shared/daemon-protocol.ts';
import { IN_SANDBOX, runtimeCommand, runtimePathsFor } from '../../../runtime/sandbox/intern.ts';
import type { DaemonSpec } from './index.ts';

/** An isolated intern's CPU priority once started: below the gateway, which stays responsive to everyone. */
export const INTERN_NICE = 10;
/** A spare's priority until its claim: below every intern. */
export const SPARE_NICE = 19;
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

/** A minimal environment: nothing of the gateway's own (database URL, master key) reaches the intern. */
export function baseEnv(isolated: boolean): Record<string, string> {
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

/** The isolated daemon's settings that are the installation's, not its intern's (a spare has them from its start). */
export const sandboxEnv = (iso: IsolationOptions): Record<string, string> => ({
  COHORT_INTERN_DIR: IN_SANDBOX.intern,
  COHORT_DAEMON_SOCKET: IN_SANDBOX.daemonSocket,
  COHORT_GATEWAY_SOCKETS: IN_SANDBOX.gateways,
  COHORT_AGENT_LIMITS: JSON.stringify(iso.limits),
  COHORT_INTERN_EGRESS_PROXY: iso.egress ? '1' : '0',
  COHORT_ALLOW_ESCALATION: iso.allowEscalation ? '1' : '0',
  COHORT_DAEMON_NICE: String(INTERN_NICE),
});

/** The daemon's settings that are its intern's. */
export const internEnv = (spec: DaemonSpec): Record<string, string> => ({
  COHORT_INTERN_ID: spec.internId,
  COHORT_AGENT_API_KEY: spec.apiKey,
  COHORT_AGENT_MODEL: spec.model,
  COHORT_AGENT_INSTRUCTIONS: spec.instructions,
  ...(spec.agent.command ? { COHORT_AGENT_COMMAND: JSON.stringify(spec.agent.command) } : {}),
  COHORT_AGENT_ENV: JSON.stringify(spec.agent.env),
  COHORT_AGENT_MODES: JSON.stringify(spec.agent.modes),
  ...(spec.agent.userNamespaces ? { COHORT_AGENT_USER_NAMESPACES: '1' } : {}),
});

/** The command that starts a sandbox on `internRoot` (a spare's: uid null, see src/runtime/sandbox/intern.ts). */
export function sandboxCommand(o: {
  iso: IsolationOptions;
  gatewaysDir: string;
  internRoot: string;
  diskImage: string | null;
  runDir: string;
  etc: { passwd: string; group: string; hosts: string };
  uid: number | null;
}): [string, string[]] {
  const { iso, ...where } = o;
  const nodeArgs = startArgsFor(import.meta.url, '../../../runtime/daemon/main');
  const code = ['dist', 'src', 'node_modules', 'package.json', 'tsconfig.json']
    .map((p) => join(PROJECT_ROOT, p))
    .filter((p) => existsSync(p));
  mkdirSync(o.gatewaysDir, { recursive: true, mode: 0o700 });
  return runtimeCommand({
    ...where,
    bwrapPath: iso.bwrapPath,
    runtimePaths: runtimePathsFor({ execPath: process.execPath, codePaths: code }),
    tmpBytes: iso.tmpMb * 1024 * 1024,
    command: [process.execPath, ...nodeArgs],
  });
}

/** An unisolated daemon (COHORT_UNSAFE_NO_ISOLATION): node on the intern's directory, as the gateway's user. */
export function unsandboxedCommand(o: { spec: DaemonSpec; dir: string; gatewaysDir: string; publicUrl?: string }): {
  file: string;
  args: string[];
  env: Record<string, string>;
} {
  return {
    file: process.execPath,
    args: [...startArgsFor(import.meta.url, '../../../runtime/daemon/main'), '--dir', o.dir],
    // Like an isolated daemon it reaches whichever gateway runs on this host through the gateways'
    // sockets, so a gateway restarted on another port does not strand it; an operator's public URL
    // (a gateway elsewhere) is used as given.
    env: {
      COHORT_INTERN_DIR: o.dir,
      COHORT_DAEMON_HOST: '127.0.0.1',
      COHORT_DAEMON_PORT: '0',
      ...(o.publicUrl ? { COHORT_AGENT_BASE_URL: o.spec.gatewayUrl } : { COHORT_GATEWAY_SOCKETS: o.gatewaysDir }),
    },
  };
}
