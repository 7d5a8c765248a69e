// The intern's agent process and its sessions: starts the agent (again, on demand, after a crash),
// gives it a clean environment, and maps caller session ids to ACP sessions (new or loaded).
import { join } from 'node:path';
import type { Logger } from 'pino';
import { AgentProcess, toAgentCallError, type AgentHandlers } from '../acp/index.ts';
import type { ResolvedOptions } from './config.ts';
import type { StartedAgent } from '../acp/spawn.ts';
import { agentCommand, startAgent, workDirOf } from './agent-command.ts';
import { SessionMap } from './sessions.ts';

export class AgentHost {
  private agent: AgentProcess | null = null;
  private starting: Promise<AgentProcess> | null = null;
  /** ACP sessions the current agent process knows (created or loaded by it). */
  private loaded = new Set<string>();
  private stopping = false;
  readonly sessions: SessionMap;
  readonly workDir: string;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly handlers: AgentHandlers,
    private readonly log: Logger,
    private early?: StartedAgent,
  ) {
    this.sessions = new SessionMap(join(o.dir, 'daemon'));
    this.workDir = workDirOf(o);
  }

  /** The live agent, if any (for calls that must not start one, like steering). */
  get current(): AgentProcess | null {
    return this.agent?.alive ? this.agent : null;
  }

  get isStarting(): boolean {
    return this.starting !== null;
  }

  ensure(): Promise<AgentProcess> {
    // A crashed agent's stdio can close before its exit is reported: never hand that one out.
    if (this.agent?.alive) return Promise.resolve(this.agent);
    this.agent = null;
    // The first start may adopt the process the daemon started before it loaded (see main.ts).
    const started = this.early;
    this.early = undefined;
    this.starting ??= AgentProcess.start({
      ...agentCommand(this.o),
      started: started ?? startAgent(this.o),
      onStderr: (line) => process.stderr.write(`${line}\n`),
      handlers: this.handlers,
    })
      .then((a) => {
        this.agent = a;
        this.loaded = new Set();
        void a.exited.then((e) => {
          if (this.agent === a) this.agent = null;
          if (!this.stopping) this.log.warn({ code: e.code, signal: e.signal }, 'agent exited');
        });
        this.log.info({ agent: a.info.name, pid: a.pid }, 'agent ready');
        return a;
      })
      .finally(() => (this.starting = null));
    return this.starting;
  }

  /** The ACP session behind a caller's session id: known to this agent, loaded, or new. */
  async session(agent: AgentProcess, sessionId: string): Promise<string> {
    const known = this.sessions.get(sessionId);
    if (known && this.loaded.has(known)) return known;
    if (known && agent.info.loadSession) {
      try {
        await agent.loadSession(known, this.workDir);
        this.loaded.add(known);
        return known;
      } catch (err) {
        this.log.warn(
          { session: sessionId, err: toAgentCallError(err).message },
          'session could not be loaded; starting it afresh',
        );
      }
    }
    const acp = await agent.newSession(this.workDir);
    this.loaded.add(acp);
    this.sessions.set(sessionId, acp);
    return acp;
  }

  /** Kills the live agent (its calls fail, so its runs end); the next turn starts a fresh one. */
  async restart(): Promise<void> {
    const agent = this.agent;
    this.agent = null;
    await agent?.stop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const agent = this.agent ?? (await this.starting?.catch(() => null));
    await agent?.stop();
  }
}
