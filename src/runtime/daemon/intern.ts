// The intern's runtime: its runs, the per-intern turn lock, pending interactions and their
// deadlines, over the agent host. Every decision about a run goes through machine.step().
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { toAgentCallError, type AgentHandlers, type AgentProcess, type StopReason } from '../acp/index.ts';
import {
  REFUSALS,
  type ApprovalMode,
  type RefusalKind,
  type RunEvent,
  type StatusResponse,
} from '../../shared/daemon-protocol.ts';
import type { ResolvedOptions } from './config.ts';
import type { StartedAgent } from '../acp/spawn.ts';
import { step, isTerminalPhase, type Effect, type Trigger } from './machine.ts';
import { Run, type Pending, type Sink } from './run.ts';
import { AgentHost } from './agent-host.ts';
import { MESSAGES, refusal, type Result } from './results.ts';
import { eventsOf } from './updates.ts';
import { emptyTurnMessage } from './turn-output.ts';
import {
  cancelledAnswer,
  decodeAnswer,
  fromElicitation,
  fromPermission,
  selfDriveConsent,
  type AcpAnswer,
  type Asked,
} from './interactions.ts';

export type { Result } from './results.ts';

type Failure = {
  reason: 'turn_failed' | 'stream_severed';
  message: string;
  retryable: boolean;
  /** The turn ran to its end (an empty one): its caller gets the error in the stream, with the
   * session it belongs to, rather than as a status (docs/daemon-protocol.md#events). */
  ranToEnd?: boolean;
};
type Ctx = {
  pending?: Pending;
  answer?: AcpAnswer;
  sink?: Sink;
  events?: RunEvent[];
  stopReason?: StopReason;
  failure?: Failure;
};

/** Terminal runs kept for replay and for telling late answers "not pending". */
const KEEP_ENDED_RUNS = 32;
/** How long a stopping daemon waits for its agent to confirm cancelled runs (the local provisioner kills after 5 s). */
const SHUTDOWN_GRACE_MS = 2_000;
/** Interactions of ended runs remembered across a sleep (docs/fleet.md), newest kept. */
const KEEP_FORGOTTEN = 256;
const SLEEPING = 'the intern is going to sleep';

export class Intern {
  readonly agents: AgentHost;
  private readonly runs = new Map<string, Run>();
  private readonly byAcp = new Map<string, Run>();
  private readonly bySession = new Map<string, Run>();
  private readonly interactions = new Map<string, { run: Run; pending: Pending }>();
  /** The commands each ACP session offers (`available_commands_update`), to explain an empty turn. */
  private readonly commands = new Map<string, string[]>();
  private readonly ended: Run[] = [];
  private lock: Run | null = null;
  private closing = false;
  /** A sleep was granted: new work is refused until the gateway stops this daemon and starts another. */
  private sleeping = false;
  private readonly startedAt = Date.now();
  /** When the last run ended or the last request came; an intern idle long enough may sleep. */
  private lastActive = Date.now();
  /** Interaction id → session of runs that ended before an earlier sleep, so a late reply is told
   * `interaction_not_pending` after the sleep as before it, rather than `interaction_unknown`. */
  private readonly forgotten: Map<string, string>;
  private readonly forgottenFile: string;

  private readonly onRunEnded: () => void;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly log: Logger,
    more: {
      /** The agent's process, when the daemon started it before loading (main.ts). */
      early?: StartedAgent;
      /** Called as each run ends (main.ts lowers the daemon's priority after the first). */
      onRunEnded?: () => void;
    } = {},
  ) {
    this.onRunEnded = more.onRunEnded ?? (() => undefined);
    this.agents = new AgentHost(o, this.handlers(), log, more.early);
    this.forgottenFile = join(o.dir, 'daemon', 'ended-interactions.json');
    this.forgotten = new Map(readForgotten(this.forgottenFile));
  }

  /** How the agent's messages reach runs: updates become events; questions pause the run. */
  private handlers(): AgentHandlers {
    return {
      onUpdate: (n) => {
        if (n.update.sessionUpdate === 'available_commands_update') return this.offered(n.sessionId, n.update);
        const run = this.byAcp.get(n.sessionId);
        if (run && !isTerminalPhase(run.state.phase))
          for (const body of eventsOf(n.update, run.model)) body.type === 'text' ? run.say(body.text) : run.emit(body);
      },
      onPermission: async (req) => {
        const asked = fromPermission(req);
        const run = this.byAcp.get(req.sessionId);
        if (!run) return { outcome: { outcome: 'cancelled' } };
        // self-drive consents on the caller's behalf, for any ACP agent.
        if (run.mode === 'self-drive' && asked.kind === 'permission') return selfDriveConsent(asked);
        const a = await this.pause(run, asked);
        return a.kind === 'permission' ? a.response : { outcome: { outcome: 'cancelled' } };
      },
      onElicitation: async (req) => {
        const asked = fromElicitation(req);
        const run = 'sessionId' in req ? this.byAcp.get(String(req.sessionId)) : undefined;
        if (!run || !asked) return { action: 'decline' };
        const a = await this.pause(run, asked);
        return a.kind === 'elicitation' ? a.response : { action: 'cancel' };
      },
    };
  }

  // ---- the machine ----

  private apply(run: Run, t: Trigger, ctx: Ctx = {}): RefusalKind | null {
    const out = step(run.state, t);
    run.state = out.state;
    for (const e of out.effects) this.effect(run, e, ctx);
    return out.refusal;
  }

  private effect(run: Run, e: Effect, ctx: Ctx): void {
    const p = ctx.pending ?? run.pending;
    switch (e) {
      case 'emit_interaction': {
        run.pending = ctx.pending!;
        const ev = run.emit({
          type: 'interaction',
          interaction_id: run.pending.id,
          interaction: run.pending.asked.interaction,
          deadline_at: new Date(run.pending.deadlineAt).toISOString(),
        });
        run.pending.seq = ev.seq;
        this.interactions.set(run.pending.id, { run, pending: run.pending });
        return;
      }
      case 'deny_interaction':
        return ctx.pending?.settle(cancelledAnswer(ctx.pending.asked.kind));
      case 'emit_completed':
        return void run.emit({
          type: 'completed',
          stop_reason: ctx.stopReason ?? 'end_turn',
          usage: run.usage,
          model: run.model,
        });
      case 'emit_failed':
        return void run.emit({
          type: 'failed',
          ...ctx.failure!,
          status: 502,
          before_output: !run.producedOutput && !ctx.failure!.ranToEnd,
          usage: run.usage,
        });
      case 'emit_capacity_failure':
        return void run.emit({
          type: 'failed',
          reason: 'busy',
          status: REFUSALS.paused_capacity.status,
          retryable: true,
          retry_after_seconds: this.o.busyRetryAfterS,
          message: `the intern cannot hold another run open across a question (${this.o.maxPausedRuns} already paused)`,
          before_output: !run.producedOutput,
          usage: run.usage,
        });
      case 'emit_ended': {
        const cause = run.state.cause;
        const message =
          cause === 'deadline'
            ? 'the interaction deadline passed; the run was cancelled'
            : cause === 'shutdown'
              ? 'the intern is stopping; the run was cancelled'
              : 'the run was cancelled';
        return void run.emit({
          type: 'ended',
          cause: cause === 'deadline' ? 'deadline' : 'cancelled',
          message,
          usage: run.usage,
        });
      }
      case 'end_stream': {
        const sink = run.sink;
        run.sink = null;
        sink?.end();
        if (isTerminalPhase(run.state.phase)) this.retire(run);
        return;
      }
      case 'take_lock':
        this.lock = run;
        return;
      case 'release_lock':
        if (this.lock === run) this.lock = null;
        return;
      case 'start_deadline':
        p!.timer = setTimeout(() => this.apply(run, { kind: 'deadline' }), Math.max(0, p!.deadlineAt - Date.now()));
        return;
      case 'clear_deadline':
        if (p?.timer) clearTimeout(p.timer);
        return;
      case 'cancel_agent':
        if (p && !p.answered) p.settle(cancelledAnswer(p.asked.kind));
        void this.agents.current?.cancel(run.acpSessionId);
        this.watchCancel(run);
        return;
      case 'deliver_answer':
        p!.answered = true;
        p!.settle(ctx.answer!);
        return;
      case 'attach':
        if (!run.attach(ctx.sink!, ctx.events ?? [])) run.state = { ...run.state, attached: false };
        else ctx.sink!.onClose(() => this.closed(run, ctx.sink!));
        return;
    }
  }

  /** An agent that does not confirm a cancel in time is restarted: its prompt call then fails, which
   * ends the run and frees the lock (and fails the agent's other runs, which it was not serving either). */
  private watchCancel(run: Run): void {
    if (run.cancelWatch) return;
    run.cancelWatch = setTimeout(() => {
      if (isTerminalPhase(run.state.phase) || this.closing) return;
      this.log.warn(
        { run: run.id, grace_ms: this.o.cancelGraceMs },
        'the agent did not confirm a cancel: restarting it',
      );
      run.unconfirmed = true;
      void this.agents.restart();
    }, this.o.cancelGraceMs);
    run.cancelWatch.unref();
    void run.done.then(() => clearTimeout(run.cancelWatch!));
  }

  private closed(run: Run, sink: Sink): void {
    if (run.sink !== sink) return; // the daemon ended this stream itself
    run.sink = null;
    this.apply(run, { kind: 'detach' });
  }

  private retire(run: Run): void {
    this.lastActive = Date.now();
    this.onRunEnded();
    if (this.byAcp.get(run.acpSessionId) === run) this.byAcp.delete(run.acpSessionId);
    run.markDone();
    this.ended.push(run);
    for (const old of this.ended.splice(0, Math.max(0, this.ended.length - KEEP_ENDED_RUNS))) {
      this.runs.delete(old.id);
      if (this.bySession.get(old.sessionId) === old) this.bySession.delete(old.sessionId);
      for (const [id, i] of this.interactions) if (i.run === old) this.interactions.delete(id);
    }
  }

  private pause(run: Run, asked: Asked): Promise<AcpAnswer> {
    return new Promise((resolve) => {
      let settled = false;
      const pending: Pending = {
        id: `call_${randomUUID().replaceAll('-', '')}`,
        asked,
        seq: 0,
        deadlineAt: Date.now() + this.o.interactionDeadlineMs,
        answered: false,
        timer: null,
        settle: (a) => {
          if (!settled) resolve(a);
          settled = true;
        },
      };
      const pausedRuns = [...this.runs.values()].filter((r) => r.state.phase === 'paused').length;
      this.apply(run, { kind: 'pause', pausedRuns, maxPausedRuns: this.o.maxPausedRuns }, { pending });
    });
  }

  /** Keeps the names of the commands a session offers; the SDK does not validate updates (acp/client.ts). */
  private offered(acpSessionId: string, update: object): void {
    const list = (update as { availableCommands?: unknown }).availableCommands;
    if (!Array.isArray(list)) return;
    const names = list.map((c) => (c as { name?: unknown })?.name).filter((n): n is string => typeof n === 'string');
    this.commands.set(acpSessionId, names);
  }

  private drive(run: Run, agent: AgentProcess, text: string): void {
    agent.prompt(run.acpSessionId, text).then(
      (stopReason) => {
        if (stopReason === 'cancelled') return this.apply(run, { kind: 'confirmed' }, { stopReason });
        // Nothing to show and no model tokens reported: the message reached no model, as far as the
        // agent says (Claude Code's own commands), so the caller is told why. A model's own empty answer
        // stays a `stop`, as on the model routes (docs/reference/intern-chat.md#empty-turns).
        if (run.state.phase === 'running' && run.isEmpty() && !run.usage?.total_tokens) {
          const message = emptyTurnMessage({
            prompt: text,
            stopReason,
            commands: this.commands.get(run.acpSessionId) ?? null,
            agentSaid: run.agentSaid,
          });
          return this.apply(
            run,
            { kind: 'fail' },
            { failure: { reason: 'turn_failed', retryable: false, message, ranToEnd: true } },
          );
        }
        this.apply(run, { kind: 'complete' }, { stopReason });
      },
      (err: unknown) => {
        const e = toAgentCallError(err);
        const failure: Failure = agent.alive
          ? { reason: 'turn_failed', retryable: e.retryable ?? false, message: e.message }
          : {
              reason: 'stream_severed',
              retryable: true,
              message: run.unconfirmed
                ? `the agent did not confirm the cancel within ${this.o.cancelGraceMs} ms and was restarted`
                : `the agent's connection broke before the turn finished: ${e.message}`,
            };
        this.apply(run, { kind: 'fail' }, { failure });
      },
    );
  }

  // ---- operations (one per endpoint) ----

  async startTurn(
    req: { session_id?: string; prompt: string; approval_mode: ApprovalMode },
    sink: Sink,
  ): Promise<Result> {
    if (this.closing) return refusal('intern_not_ready', this.sleeping ? SLEEPING : 'the intern is shutting down');
    this.lastActive = Date.now();
    const live = req.session_id ? this.bySession.get(req.session_id) : undefined;
    if (live && live.state.phase === 'running') return this.steer(live, req.prompt);
    // The message never names the running session: its id is the only handle on another caller's conversation.
    const busy = () => this.busy(MESSAGES.busy);
    if (this.lock) return busy();
    if (live && !isTerminalPhase(live.state.phase)) {
      // A new prompt supersedes the session's paused run (its question goes unanswered).
      this.apply(live, { kind: 'cancel' });
      await live.done;
    }
    if (this.lock) return busy();
    const run = new Run(req.session_id ?? `sess_${randomUUID()}`, req.approval_mode, this.o.replayBufferEvents);
    this.lock = run; // taken before any await, so two prompts cannot both start
    let agent: AgentProcess;
    try {
      agent = await this.agents.ensure();
      run.acpSessionId = await this.agents.session(agent, run.sessionId);
      // Agents without these modes still get self-drive consent from the daemon (see handlers()).
      const mode = this.o.agentModes[req.approval_mode] ?? req.approval_mode;
      if (agent.offersMode(run.acpSessionId, mode)) await agent.setMode(run.acpSessionId, mode);
    } catch (err) {
      this.lock = null;
      const down = !this.agents.current;
      return refusal(
        down ? 'intern_unreachable' : 'intern_rejected',
        `the agent ${down ? 'could not be reached' : 'refused the session'}: ${toAgentCallError(err).message}`,
      );
    }
    this.runs.set(run.id, run);
    this.byAcp.set(run.acpSessionId, run);
    this.bySession.set(run.sessionId, run);
    run.sink = sink;
    sink.onClose(() => this.closed(run, sink));
    run.emit({ type: 'run', run_id: run.id, session_id: run.sessionId, approval_mode: run.mode });
    this.drive(run, agent, req.prompt);
    return { kind: 'stream' };
  }

  private async steer(run: Run, text: string): Promise<Result> {
    // The machine decides; delivery needs to await the agent, so it happens here, not in effect().
    if (!step(run.state, { kind: 'steer' }).effects.includes('deliver_steer'))
      return this.busy('the session has no running turn to take the message');
    const agent = this.agents.current;
    if (!agent?.info.steering) return this.busy('this agent cannot take a message during a running turn');
    try {
      await agent.steer(run.acpSessionId, text);
    } catch (err) {
      return this.busy(`the running turn could not take the message: ${toAgentCallError(err).message}`);
    }
    if (!isTerminalPhase(run.state.phase)) run.emit({ type: 'steered', text });
    return { kind: 'steered', session_id: run.sessionId };
  }

  answer(sessionId: string, interactionId: string, text: string, sink: Sink): Result {
    if (this.sleeping) return refusal('intern_not_ready', SLEEPING);
    this.lastActive = Date.now();
    const entry = this.interactions.get(interactionId);
    const known = entry && entry.run.sessionId === sessionId ? entry : undefined;
    // docs/reference/intern-chat.md#rules, rule 3: while another run holds the turn lock, a reply is busy
    // whatever it names; the lookup's own refusals come once the lock is free (or held by the reply's own
    // run).
    if (this.lock && this.lock !== known?.run) return this.busy(MESSAGES.busy);
    if (!known && this.forgotten.get(interactionId) === sessionId)
      return refusal('interaction_not_pending', MESSAGES.interaction_not_pending);
    if (!known) return refusal('interaction_unknown', `no interaction ${interactionId} in session ${sessionId}`);
    const { run, pending } = known;
    if ((pending.answered || run.pending !== pending) && !isTerminalPhase(run.state.phase)) {
      return run.state.attached
        ? refusal('already_attached', MESSAGES.already_attached)
        : refusal('interaction_not_pending', 'this interaction was already answered');
    }
    const decoded = decodeAnswer(pending.asked, text);
    const events = run.log.since(pending.seq);
    const r = this.apply(
      run,
      { kind: 'answer', valid: decoded.ok, replayOk: events !== null },
      { answer: decoded.ok ? decoded.answer : undefined, sink, events: events ?? [] },
    );
    if (r) return refusal(r, decoded.ok ? MESSAGES[r] : decoded.message);
    if (decoded.ok && decoded.cancelRun) this.apply(run, { kind: 'cancel' });
    // The continued stream starts after the pause, past the model event the run reported before it.
    else if (run.model) run.emit({ type: 'model', model: run.model });
    return { kind: 'stream' };
  }

  attach(runId: string, after: number, sink: Sink): Result {
    if (this.sleeping) return refusal('intern_not_ready', SLEEPING);
    const run = this.runs.get(runId);
    if (!run) return refusal('run_not_found', `no run ${runId}`);
    const events = run.log.since(after);
    const r = this.apply(run, { kind: 'attach', replayOk: events !== null }, { sink, events: events ?? [] });
    return r ? refusal(r, MESSAGES[r]) : { kind: 'stream' };
  }

  async cancel(target: { runId: string } | { sessionId: string }): Promise<Run | null> {
    const run = 'runId' in target ? this.runs.get(target.runId) : this.bySession.get(target.sessionId);
    if (!run || ('sessionId' in target && isTerminalPhase(run.state.phase))) return null;
    this.apply(run, { kind: 'cancel' });
    await run.done;
    return run;
  }

  /** Grants a sleep when no run is live and none was for `idleMs` (a paused run keeps the intern
   * awake until its deadline): from then on new work is refused, and what a late reply to an
   * ended run's interaction needs is on disk for the next daemon. */
  hibernate(idleMs: number): { kind: 'granted' } | Extract<Result, { kind: 'refusal' }> {
    if (this.sleeping) return { kind: 'granted' };
    if (this.closing) return { kind: 'refusal', refusal: 'intern_not_ready', message: 'the intern is shutting down' };
    const live = this.lock !== null || [...this.runs.values()].some((r) => !isTerminalPhase(r.state.phase));
    if (live || Date.now() - this.lastActive < idleMs)
      return {
        kind: 'refusal',
        refusal: 'busy',
        message: 'the intern is not idle',
        retryAfterS: this.o.busyRetryAfterS,
      };
    this.closing = this.sleeping = true;
    const ended = [...this.interactions].map(([id, i]) => [id, i.run.sessionId] as [string, string]);
    const keep = [...this.forgotten, ...ended].slice(-KEEP_FORGOTTEN);
    try {
      mkdirSync(dirname(this.forgottenFile), { recursive: true, mode: 0o700 });
      writeFileSync(this.forgottenFile, JSON.stringify(keep), { mode: 0o600 });
    } catch {
      // Without it a late reply after the sleep is 404 interaction_unknown, as after a restart.
    }
    return { kind: 'granted' };
  }

  private busy(message: string): Result {
    return { kind: 'refusal', refusal: 'busy', message, retryAfterS: this.o.busyRetryAfterS };
  }

  status(): StatusResponse {
    const a = this.agents.current;
    return {
      intern_id: this.o.internId,
      protocol: 1,
      agent: {
        state: a ? 'ready' : this.agents.isStarting ? 'starting' : 'down',
        name: a?.info.name ?? null,
        version: a?.info.version ?? null,
        pid: a?.pid ?? null,
        load_session: a?.info.loadSession ?? false,
        steering: a?.info.steering ?? false,
      },
      turn: this.lock && this.runs.has(this.lock.id) ? { run_id: this.lock.id, session_id: this.lock.sessionId } : null,
      runs: [...this.runs.values()]
        .filter((r) => !isTerminalPhase(r.state.phase))
        .map((r) => ({
          run_id: r.id,
          session_id: r.sessionId,
          phase: r.state.phase,
          attached: r.state.attached,
          last_seq: r.log.lastSeq,
          deadline_at: r.state.phase === 'paused' && r.pending ? new Date(r.pending.deadlineAt).toISOString() : null,
        })),
      sessions: this.agents.sessions.size,
      limits: {
        interaction_deadline_ms: this.o.interactionDeadlineMs,
        replay_buffer_events: this.o.replayBufferEvents,
        max_paused_runs: this.o.maxPausedRuns,
        keepalive_ms: this.o.keepaliveMs,
      },
      uptime_ms: Date.now() - this.startedAt,
    };
  }

  /** Cancels every live run and gives the agent a moment to confirm, so callers read `run_ended`
   * rather than a severed stream; then stops the agent (which fails whatever did not confirm). */
  async close(): Promise<void> {
    this.closing = true;
    const runs = [...this.runs.values()];
    for (const run of runs) this.apply(run, { kind: 'cancel', cause: 'shutdown' });
    const all = Promise.all(runs.map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, SHUTDOWN_GRACE_MS)))]);
    clearTimeout(timer);
    await this.agents.stop();
    await all;
  }
}

function readForgotten(file: string): [string, string][] {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return Array.isArray(v)
      ? v.filter((e): e is [string, string] => Array.isArray(e) && typeof e[0] === 'string' && typeof e[1] === 'string')
      : [];
  } catch {
    return [];
  }
}
