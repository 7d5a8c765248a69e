// The client side of ACP over stdio: spawn an agent process, initialize it, and expose the few
// calls the daemon makes. Updates reach the daemon strictly in order per session.
import { z } from 'zod';
import { setImmediate as tick } from 'node:timers/promises';
import {
  client,
  methods,
  PROTOCOL_VERSION,
  RequestError,
  type ClientConnection,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type StopReason,
} from '@agentclientprotocol/sdk';
import { childStdioStream } from './stdio.ts';
import { SerialQueues } from './serial.ts';
import { META_RETRYABLE, META_STEERING, STEER_METHOD, type SteerParams } from './meta.ts';
import { startAgentProcess, type AgentCommand, type AgentExit, type StartedAgent } from './spawn.ts';

/**
 * Updates are checked only for the envelope here: the SDK's full schema (Zod intersections) costs
 * more than everything else per streamed chunk, and the daemon reads the few fields it uses
 * defensively (daemon/updates.ts).
 */
const UpdateEnvelope = z.looseObject({ sessionId: z.string(), update: z.looseObject({ sessionUpdate: z.string() }) });

export type AgentHandlers = {
  /** Called in arrival order per session, never concurrently for one session. */
  onUpdate(n: SessionNotification): void;
  onPermission(req: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  onElicitation(req: CreateElicitationRequest, signal: AbortSignal): Promise<CreateElicitationResponse>;
};

export type SpawnAgentOptions = AgentCommand & {
  /** The process, when it was started already (early, while the daemon loaded); else it is started here. */
  started?: StartedAgent;
  handlers: AgentHandlers;
  /** Receives the agent's stderr (its logs), line by line. */
  onStderr?: (line: string) => void;
};

export type AgentInfo = { name: string | null; version: string | null; loadSession: boolean; steering: boolean };
export type { AgentExit };

/** A failed agent call, as a value: the JSON-RPC code, message and the agent's retry classification. */
export type AgentCallError = { code: number; message: string; retryable: boolean | undefined };

export function toAgentCallError(err: unknown): AgentCallError {
  if (err instanceof RequestError) {
    const data = err.data as Record<string, unknown> | undefined;
    const retryable = typeof data?.[META_RETRYABLE] === 'boolean' ? (data[META_RETRYABLE] as boolean) : undefined;
    return { code: err.code, message: err.message, retryable };
  }
  return { code: -32603, message: err instanceof Error ? err.message : String(err), retryable: undefined };
}

const exitError = (e: AgentExit) => new Error(`agent exited (code ${e.code}, signal ${e.signal})`);

export class AgentProcess {
  /** Set once the process has exited; a call failing after that failed because of it. */
  exit: AgentExit | null = null;
  private readonly inflight = new Set<(err: Error) => void>();
  private readonly modes = new Map<string, Set<string>>();

  private constructor(
    private readonly conn: ClientConnection,
    private readonly queues: SerialQueues,
    readonly info: AgentInfo,
    readonly pid: number | null,
    readonly exited: Promise<AgentExit>,
    private readonly kill: () => void,
  ) {
    void exited.then((e) => {
      this.exit = e;
      for (const reject of this.inflight) reject(exitError(e));
      this.inflight.clear();
    });
  }

  static async start(opts: SpawnAgentOptions): Promise<AgentProcess> {
    const { child, exited } = opts.started ?? startAgentProcess(opts);
    let buf = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      buf += s;
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) opts.onStderr?.(l);
    });
    const queues = new SerialQueues();
    const h = opts.handlers;
    const app = client({ name: 'cohort-daemon' })
      .onNotification(methods.client.session.update, UpdateEnvelope, ({ params }) => {
        void queues.push(params.sessionId, () => h.onUpdate(params as SessionNotification));
      })
      .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
        let answer!: Promise<RequestPermissionResponse>;
        await queues.push(params.sessionId, () => void (answer = h.onPermission(params, signal)));
        return answer;
      })
      .onRequest(methods.client.elicitation.create, async ({ params, signal }) => {
        const key = 'sessionId' in params && typeof params.sessionId === 'string' ? params.sessionId : '';
        let answer!: Promise<CreateElicitationResponse>;
        await queues.push(key, () => void (answer = h.onElicitation(params, signal)));
        return answer;
      });
    const conn = app.connect(childStdioStream(child));
    const kill = () => child.kill('SIGKILL');
    try {
      const init = await Promise.race([
        conn.agent.request(methods.agent.initialize, {
          protocolVersion: PROTOCOL_VERSION,
          clientCapabilities: { elicitation: { form: {} } },
          clientInfo: { name: 'cohort-daemon', version: '1' },
        }),
        exited.then((e) => Promise.reject(new Error(`agent exited during initialize (code ${e.code})`))),
      ]);
      const info: AgentInfo = {
        name: init.agentInfo?.name ?? null,
        version: init.agentInfo?.version ?? null,
        loadSession: init.agentCapabilities?.loadSession === true,
        steering: init._meta?.[META_STEERING] === true,
      };
      return new AgentProcess(conn, queues, info, child.pid ?? null, exited, kill);
    } catch (err) {
      kill();
      conn.close();
      throw err;
    }
  }

  /** False once the process exited or its stdio closed: a call failing then failed because of it. */
  get alive(): boolean {
    return this.exit === null && !this.conn.signal.aborted;
  }

  /**
   * Rejects as soon as the agent process exits, so no call can hang on a dead agent. Pending calls
   * are tracked in a set rather than raced against `exited`, which would pile up reactions on it.
   */
  private call<T>(p: Promise<T>): Promise<T> {
    if (this.exit) return Promise.reject(exitError(this.exit));
    return new Promise<T>((resolve, reject) => {
      this.inflight.add(reject);
      p.then(resolve, reject).finally(() => this.inflight.delete(reject));
    });
  }

  async newSession(cwd: string): Promise<string> {
    const res = await this.call(this.conn.agent.request(methods.agent.session.new, { cwd, mcpServers: [] }));
    this.remember(res.sessionId, res.modes);
    return res.sessionId;
  }

  async loadSession(sessionId: string, cwd: string): Promise<void> {
    const res = await this.call(
      this.conn.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] }),
    );
    this.remember(sessionId, res?.modes);
    // History replayed by the agent is dropped by the daemon; wait so it cannot leak into a run.
    await this.settle(sessionId);
  }

  /** Whether the agent offers this session mode (from its session/new or session/load answer). */
  offersMode(sessionId: string, modeId: string): boolean {
    return this.modes.get(sessionId)?.has(modeId) ?? false;
  }

  async setMode(sessionId: string, modeId: string): Promise<void> {
    await this.call(this.conn.agent.request(methods.agent.session.setMode, { sessionId, modeId }));
  }

  private remember(sessionId: string, modes: { availableModes: { id: string }[] } | null | undefined): void {
    if (modes) this.modes.set(sessionId, new Set(modes.availableModes.map((m) => m.id)));
  }

  /** Resolves after every update the agent sent before its answer has been handled. */
  async prompt(sessionId: string, text: string): Promise<StopReason> {
    const res = await this.call(
      this.conn.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] }),
    );
    await this.settle(sessionId);
    return res.stopReason;
  }

  async cancel(sessionId: string): Promise<void> {
    await this.conn.agent.notify(methods.agent.session.cancel, { sessionId }).catch(() => undefined);
  }

  async steer(sessionId: string, text: string): Promise<void> {
    await this.call(this.conn.agent.request<unknown, SteerParams>(STEER_METHOD, { sessionId, text }));
  }

  async stop(): Promise<void> {
    this.conn.close();
    this.kill();
    await this.exited;
  }

  private async settle(sessionId: string): Promise<void> {
    // Notifications that arrived before the response may still be in the SDK's microtask chain.
    await tick();
    await this.queues.drain(sessionId);
  }
}
