// One run: its state, its event log (what attachments replay), the stream it is attached to,
// and the interaction it is paused on. The Intern drives it through the pure state machine.
import { randomUUID } from 'node:crypto';
import {
  endsStream,
  type ApprovalMode,
  type RunEvent,
  type RunEventBody,
  type Usage,
} from '../../shared/daemon-protocol.ts';
import { EventLog } from './event-log.ts';
import { initialRunState, type RunState } from './machine.ts';
import type { AcpAnswer, Asked } from './interactions.ts';
import { LocalCommandFilter } from './turn-output.ts';

/** Where a run's events go: an open SSE response. */
export type Sink = { begin(): void; write(e: RunEvent): void; end(): void; onClose(cb: () => void): void };

export type Pending = {
  id: string;
  asked: Asked;
  /** seq of the interaction event: an answer resumes the stream after it. */
  seq: number;
  deadlineAt: number;
  answered: boolean;
  timer: NodeJS.Timeout | null;
  settle(a: AcpAnswer): void;
};

export class Run {
  readonly id = `run_${randomUUID()}`;
  state: RunState = initialRunState;
  acpSessionId = '';
  sink: Sink | null = null;
  pending: Pending | null = null;
  usage: Usage | null = null;
  model: string | null = null;
  producedOutput = false;
  /** The agent reported a tool call: a turn with one is not empty, though it said nothing. */
  usedTools = false;
  private readonly text = new LocalCommandFilter();
  /** Started when the agent is asked to cancel this run (Intern.watchCancel). */
  cancelWatch: NodeJS.Timeout | null = null;
  /** The agent never confirmed this run's cancel and was restarted. */
  unconfirmed = false;
  readonly log: EventLog;
  readonly done: Promise<void>;
  markDone!: () => void;

  constructor(
    readonly sessionId: string,
    readonly mode: ApprovalMode,
    replayCapacity: number,
  ) {
    this.log = new EventLog(replayCapacity);
    this.done = new Promise((r) => (this.markDone = r));
  }

  /** The agent's text, less what Claude Code marks as local-command output (turn-output.ts). */
  say(text: string): void {
    const kept = this.text.push(text);
    if (kept) this.append({ type: 'text', text: kept });
  }

  /** Gives back text held for a possible marked block: every other event comes after it. */
  flushText(): void {
    const held = this.text.flush();
    if (held) this.append({ type: 'text', text: held });
  }

  /** Nothing for the caller so far (text held for a possible marked block given back first): no
   * text, reasoning, tool call or question. */
  isEmpty(): boolean {
    this.flushText();
    return !this.producedOutput && !this.usedTools;
  }

  /** A local command's output the agent sent, taken out of its text. */
  get agentSaid(): string | null {
    return this.text.said;
  }

  /** Any event but the agent's text (say()). One the caller sees comes after the text held before
   * it; a model or usage report, which shows nothing, leaves a block being read open. */
  emit(body: Exclude<RunEventBody, { type: 'text' }>): RunEvent {
    if (body.type !== 'model' && body.type !== 'usage') this.flushText();
    return this.append(body);
  }

  private append(body: RunEventBody): RunEvent {
    if (body.type === 'model') this.model = body.model;
    if (body.type === 'tool') this.usedTools = true;
    if (body.type === 'usage') this.usage = body.usage;
    if (body.type === 'text' || body.type === 'reasoning' || body.type === 'interaction') this.producedOutput = true;
    const e = this.log.append(body);
    this.sink?.write(e);
    return e;
  }

  /** Replays events to a new sink; keeps it attached unless the replay already ends the stream. */
  attach(sink: Sink, events: RunEvent[]): boolean {
    sink.begin();
    for (const e of events) sink.write(e);
    const last = events.at(-1);
    if (last && endsStream(last)) {
      sink.end();
      return false;
    }
    this.sink = sink;
    return true;
  }
}
