// The provisioner interface: where an intern's daemon runs. The local implementation starts it
// as a process on this machine; a cluster scheduler would implement the same four operations.
// May import: src/shared/daemon-protocol.ts, ../daemon-client.ts (health), ./files.ts (types), node built-ins.
import type { DiskView } from './files.ts';

export type DaemonSpec = {
  internId: string;
  secret: string;
  /** The intern's own API key, which the agent uses for model requests. */
  apiKey: string;
  model: string;
  instructions: string;
  /** The gateway's /api/v1 URL as the agent reaches it. */
  gatewayUrl: string;
  /** The agent to run, from the operator's catalogue: its command (null: the built-in agent), environment and mode ids. */
  agent: {
    command: string[] | null;
    env: Record<string, string>;
    modes: Record<string, string>;
    /** It builds sandboxes of its own, which need user namespaces (agent-catalogue.ts). */
    userNamespaces: boolean;
  };
};

/** Where a started daemon is reached (`hostname` on the intern record) and, locally, its process. */
export type DaemonHandle = { hostname: string; pid: number | null };

export type Step = { label: string; number: number; total: number };

export type Provisioner = {
  start(spec: DaemonSpec, onStep: (s: Step) => Promise<void>): Promise<DaemonHandle>;
  /** Stops the daemon (and its agent); its directory stays. Besides `pid`, whatever was recorded
   * as started for the intern (a start that a dead gateway left), unless `alone`: a start that
   * lost the intern to another gateway stops only its own process, not the other's. */
  stop(intern: { id: string; pid: number | null; alone?: boolean }): Promise<void>;
  /** Stops the daemon and removes everything it kept. */
  destroy(intern: { id: string; pid: number | null }): Promise<void>;
  healthy(hostname: string): Promise<boolean>;
  /** Writes an intern's files (sessions, work files), running or not, into `to` as daemon.tar and
   * files.tar, read through the intern's own view (files.ts); what could not be read is `skipped`. */
  exportFiles(intern: { id: string; pid: number | null }, to: string): Promise<FileCount & { skipped: string[] }>;
  /** Gives a new intern (a restore) the files of the archives in `from`, checked before; it starts
   * on them at its next provision. */
  importFiles(internId: string, from: string): Promise<void>;
  /** The intern's disk as the intern itself sees it, for the files API (files.ts runs each
   * operation there as the intern's uid): a running intern's in its daemon's mount namespace;
   * any other's (reads only) its disk mounted read-only and nosymfollow in a private namespace.
   * null: `write` asked of an intern whose daemon is not running. */
  openView(intern: { id: string; pid: number | null }, o: { write: boolean }): Promise<InternView | null>;
  /** The disk of an intern that has never started (just created), mounted read-write where no
   * daemon runs, its folders made and handed to its uid: for what it is given before its first
   * start (its repositories). The caller starts it only after `release`. */
  prepareDisk(internId: string): Promise<InternView>;
  /** Lets go of what the provisioner holds for itself (warm spares); interns keep running. */
  close?(): Promise<void>;
};

/** Where an intern's disk root is seen, by which uid its files are handled, and what to release after. */
export type InternView = { view: DiskView; uid: number | null; release(): Promise<void> };

export type FileCount = { files: number; bytes: number };

export { createLocalProvisioner } from './local.ts';
