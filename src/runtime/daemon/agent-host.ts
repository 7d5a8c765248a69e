// The intern's agent process and its sessions: starts the agent (again, on demand, after a crash),
// gives it a clean environment, and maps caller session ids to ACP sessions (new or loaded).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { AgentProcess, toAgentCallError, type AgentHandlers } from '../acp/index.ts';
import type { ResolvedOptions } from './config.ts';
import { SessionMap } from './sessions.ts';

type ModelEndpoint = { baseUrl: string; apiKey: string; model: string } | undefined;

/** A catalogue value with the intern's model endpoint filled in ({{base_url}}, {{origin}}, {{api_key}}, {{model}}). */
export function fill(value: string, model: ModelEndpoint): string {
  if (!model) return value;
  const origin = model.baseUrl ? new URL(model.baseUrl).origin : '';
  return value.replaceAll('{{base_url}}', model.baseUrl).replaceAll('{{origin}}', origin).replaceAll('{{api_key}}', model.apiKey).replaceAll('{{model}}', model.model);
}

const fillEnv = (env: Record<string, string>, model: ModelEndpoint) => Object.fromEntries(Object.entries(env).map(([k, v]) => [k, fill(v, model)]));

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
  ) {
    this.sessions = new SessionMap(join(o.dir, 'daemon'));
    this.workDir = join(o.dir, 'work');
    mkdirSync(this.workDir, { recursive: true });
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
    this.starting ??= AgentProcess.start({
      ...this.command(),
      cwd: this.workDir,
      uid: this.o.agentUid,
      env: this.env(),
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

  /** The agent's command line; under an intern uid, behind prlimit so its limits hold for all it starts. */
  private command(): { command: string; args: string[] } {
    const l = this.o.agentLimits;
    const agent = { command: this.o.agent.command, args: this.o.agent.args.map((a) => fill(a, this.o.model)) };
    if (!l) return agent;
    const mb = (n: number) => String(n * 1024 * 1024);
    const limits = [`--nproc=${l.processes}`, `--data=${mb(l.memoryMb)}`, `--fsize=${mb(l.fileMb)}`, `--nofile=${l.openFiles}`, `--core=0`];
    return { command: '/usr/bin/prlimit', args: [...limits, '--', agent.command, ...agent.args] };
  }

  private env(): NodeJS.ProcessEnv {
    // The daemon's own secret and settings stay out of the agent's environment; the operator's
    // COHORT_AGENT_* tuning (context window, step limit, bwrap path) passes through.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COHORT_') || k.startsWith('COHORT_AGENT_')));
    delete env.COHORT_AGENT_COMMAND;
    env.COHORT_AGENT_STATE_DIR = join(this.o.dir, 'agent');
    env.COHORT_AGENT_ALLOW_ESCALATION = this.o.allowEscalation ? '1' : '0';
    if (this.o.agentUid !== undefined) env.HOME = join(this.o.dir, 'home');
    if (this.o.egressProxy && this.o.model) {
      // The forwarder carries CONNECT to a gateway, which tunnels to the hosts the operator allows.
      const proxy = new URL(this.o.model.baseUrl).origin;
      for (const k of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[k] = proxy;
      env.NO_PROXY = env.no_proxy = '127.0.0.1,localhost';
    }
    env.LOG_LEVEL = this.o.logLevel;
    if (this.o.instructions) env.COHORT_AGENT_INSTRUCTIONS = this.o.instructions;
    if (this.o.model) {
      env.COHORT_AGENT_BASE_URL = this.o.model.baseUrl;
      env.COHORT_AGENT_API_KEY = this.o.model.apiKey;
      env.COHORT_AGENT_MODEL = this.o.model.model;
    }
    return { ...env, ...fillEnv(this.o.agentEnv, this.o.model) };
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
        this.log.warn({ session: sessionId, err: toAgentCallError(err).message }, 'session could not be loaded; starting it afresh');
      }
    }
    const acp = await agent.newSession(this.workDir);
    this.loaded.add(acp);
    this.sessions.set(sessionId, acp);
    return acp;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const agent = this.agent ?? (await this.starting?.catch(() => null));
    await agent?.stop();
  }
}
