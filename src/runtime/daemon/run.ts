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

  emit(body: RunEventBody): RunEvent {
    if (body.type === 'model') this.model = body.model;
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
