// The intern daemon (`bin/cohort.mjs daemon`): one process per intern, owning its sessions, runs,
// pending interactions, deadlines and replay buffers (docs/internals/architecture.md#principles,
// 1), and driving its ACP agent on stdio. May import: src/shared, src/runtime/acp,
// src/runtime/sandbox, node and npm packages — never gateway code (src/gateway).
// Only light modules are imported statically: the agent is started first, and the daemon's own
// code (the ACP SDK above all, some 150 ms) loads while the agent's process boots; waking a
// sleeping intern waits for both, so the two now overlap instead of adding up.
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { StatusResponse } from '../../shared/daemon-protocol.ts';
import { optionsFromEnv, resolveOptions, type DaemonOptions } from './config.ts';
import { startForwarder } from './forward.ts';
import { rmSync } from 'node:fs';
import type { StartedAgent } from '../acp/spawn.ts';
import { agentCommand, limited, startAgent } from './agent-command.ts';
import { assignAgent, parseAssignment, SPARE_WAITING, startSpareAgent } from './spare.ts';
import { lowerPriorityLater, setGroupPriority } from '../../shared/priority.ts';
import { getPriority } from 'node:os';
import { firstLine } from '../../shared/first-line.ts';

export type { DaemonOptions } from './config.ts';

export type RunningDaemon = { url: string; status(): StatusResponse; close(): Promise<void> };

/** Starts a daemon in this process; resolves once its agent is initialized and it listens. `spare`:
 * the built-in agent's process a warm spare started before it knew its intern (spare.ts). */
export async function startDaemon(options: DaemonOptions, spare?: StartedAgent): Promise<RunningDaemon> {
  const forwarder = options.gatewaySockets ? await startForwarder({ socketsDir: options.gatewaySockets }) : null;
  const o = resolveOptions(
    forwarder && options.model ? { ...options, model: { ...options.model, baseUrl: forwarder.url } } : options,
  );
  const command = agentCommand(o);
  if (spare && !o.builtinAgent) spare.child.kill('SIGKILL');
  const early = spare && o.builtinAgent ? assignAgent(spare, command) : startAgent(o, command);
  const [{ pino }, { createDaemonServer }, { Intern }] = await Promise.all([
    import('pino'),
    import('./http.ts'),
    import('./intern.ts'),
  ]);
  const log = pino({ name: 'cohort-daemon', level: o.logLevel, base: { intern: o.internId } }, pino.destination(2));
  // Until its first turn ends (or 5 s pass) the daemon keeps its starter's priority: a wake's
  // first turn is the one a caller waits for (docs/fleet.md). The sandbox is a session of its own
  // (bubblewrap's --new-session), whose group is lowered with it.
  const settle = lowerPriorityLater(o.nice, { group: true });
  const intern = new Intern(o, log, { early, onRunEnded: settle });
  await intern.agents.ensure();
  const server = createDaemonServer({ intern, secret: o.secret, keepaliveMs: o.keepaliveMs, log });
  if (o.socket) rmSync(o.socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (o.socket) server.listen(o.socket, () => resolve());
    else server.listen(o.port, o.host, () => resolve());
  });
  const url = o.socket ? `unix:${o.socket}` : httpUrl(server.address() as AddressInfo);
  log.info({ url }, 'daemon listening');
  return {
    url,
    status: () => intern.status(),
    close: async () => {
      await intern.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await forwarder?.close();
    },
  };
}

const httpUrl = ({ address, port }: AddressInfo) =>
  `http://${address.includes(':') ? `[${address}]` : address}:${port}`;

/** `bin/cohort.mjs daemon [--dir D] [--host H] [--port P]`; everything else from the environment (docs/guides/interns.md). */
export async function runDaemon(
  argv: string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  let secret: string | undefined;
  let spare: StartedAgent | undefined;
  if (env.COHORT_DAEMON_SPARE === '1') {
    // A warm spare: the agent starts now, the intern arrives on stdin when one wakes (spare.ts).
    // It was started below every intern (nice 19); its sandbox's session group is put there too,
    // before it says it waits: a claim sets the group back, and must come after.
    const lowered = setGroupPriority(getPriority());
    const limits = env.COHORT_AGENT_LIMITS ? JSON.parse(env.COHORT_AGENT_LIMITS) : undefined;
    spare = startSpareAgent(limited(resolveOptions({ secret: '-', dir: '/', agentLimits: limits })));
    // What startDaemon loads after it starts the agent, loaded while there is time.
    await Promise.all([import('pino'), import('./http.ts'), import('./intern.ts'), lowered]);
    process.stdout.write(`${SPARE_WAITING}\n`);
    const assignment = parseAssignment((await firstLine(process.stdin)).trim());
    Object.assign(env, assignment.env);
    secret = assignment.secret;
    // The intern's disk was mounted over the directory this process started in.
    if (env.COHORT_INTERN_DIR) process.chdir(env.COHORT_INTERN_DIR);
  } else if (env.COHORT_DAEMON_SECRET_STDIN === '1') secret = (await firstLine(process.stdin)).trim();
  const daemon = await startDaemon(optionsFromEnv(env, argv, { secret }), spare);
  // The provisioner reads the address from this one stdout line.
  process.stdout.write(`${JSON.stringify({ listening: daemon.url })}\n`);
  const stop = () => void daemon.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runDaemon().catch((err: unknown) => {
    process.stderr.write(`cohort daemon: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
