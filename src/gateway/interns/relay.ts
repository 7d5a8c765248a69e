// Relays one daemon run to one HTTP response (docs/reference/intern-chat.md#run-states): holds the status
// until the first output so a refusal can still be a status, then streams chunks through the SSE writer.
// Owns the route deadline (408 before the handler answered), the turn budget (504), and client disconnects
// (closing the daemon stream cancels a running run; after `[DONE]` there is nothing to cancel). Keeps
// nothing after the response ends (docs/internals/architecture.md#principles, 1).
//
// relay() resolves as soon as the 200 is written; the rest of the stream is pushed through one
// RelayRun object (the daemon body's sink), so an open stream holds that object and its sockets,
// not the route's request, body, async frames or pending promises (a gateway may hold 10,000
// open streams), and a relayed batch costs a parse, a map and a write, with no promise between.
import type { ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import {
  type ApiError,
  clientClosed,
  gatewayStopping,
  internRefused,
  routeDeadline,
  turnBudgetSpent,
} from '../errors.ts';
import {
  initialState,
  mapApiEnding,
  mapEvent,
  type ApiEnding,
  type MapState,
  type Refusal,
  type Step,
} from './chunks.ts';
import { DONE as DONE_FRAME, openSse, type OpenStreams, type SseWriter } from '../../shared/sse/write.ts';
import { chunkEncoder } from '../http/sse-frames.ts';
import type { Opened, Pending } from './daemon-client.ts';
import type { Feed, Sink } from '../../shared/http/body.ts';
import type { RunEvent, SteeredResponse } from '../../shared/daemon-protocol.ts';
import type { TurnEnd } from '../observability/spans.ts';
import { newDraft, recordEnd, recordEvent, recordRequest, type Draft, type Entry } from './transcript.ts';

export type RelayTimings = { keepaliveMs: number; routeDeadlineMs: number; turnBudgetMs: number };

export type RelayOptions = {
  res: ServerResponse;
  /** Starts the daemon request; cancelling it closes the daemon stream (and so cancels a running run). */
  open: () => Pending;
  timings: RelayTimings;
  /** Called once, just before the 200 is written (the route hands the socket over here). */
  onOpen: () => void;
  /** The session being continued, for a `tool` reply. */
  sessionId?: string;
  /** Write the agent's tool calls as `cohort_tool` chunks (the request's `X-Cohort-Tool-Events: 1`). */
  toolEvents?: boolean;
  /** The gateway's open streams: its shutdown ends this one with `stream_severed`. */
  streams?: OpenStreams;
  /** Told once how the turn ended (broadcast makes it a span); not for a steered message. */
  onEnd?: (turn: TurnEnd) => void;
  /** Keeps the session's transcript (sessions.ts): the caller's message, and told once, when a
   * stream that opened ends, that request's entries. */
  record?: {
    message: Parameters<typeof recordRequest>[2];
    save: (sessionId: string, entries: Entry[]) => void;
  };
};

export type RelayResult = { kind: 'steered'; body: SteeredResponse } | { kind: 'streamed' };

type Interrupt = 'route_deadline' | 'turn_budget' | 'client_gone' | 'shutdown';
type Frames = { text: string; end: boolean };

const seconds = (ms: number) => Math.max(1, Math.round(ms / 1000));
const DONE: IteratorResult<RunEvent[]> = { done: true, value: undefined };
const toDone = () => DONE;
const noop = () => {};
/** How long a finished daemon stream may take to end before its connection is dropped. */
const DRAIN_MS = 5_000;

function refusalError(r: Refusal): ApiError {
  const retryAfter = r.reason === 'busy' || r.reason === 'rate_limited' ? String(r.retryAfter ?? 1) : undefined;
  return internRefused({ status: r.status, reason: r.reason, message: r.message, retryable: r.retryable, retryAfter });
}

export function relay(o: RelayOptions): Promise<RelayResult> {
  return new RelayRun(o).start();
}

class RelayRun implements Sink<RunEvent> {
  private readonly encode = chunkEncoder();
  private state: MapState;
  /** Closes the daemon stream, at any point (a no-op until the request is made). */
  private cancel: () => void = noop;
  /** The daemon's events: pulled until the 200, pushed to this object after it. */
  private feed: Feed<RunEvent> | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  private sse: SseWriter | null = null;
  private routeTimer: NodeJS.Timeout | null = null;
  private budgetTimer: NodeJS.Timeout | null = null;
  /** Before the 200: the first interrupt, and the waiter it wakes. */
  private fired: Interrupt | null = null;
  private wake: ((i: Interrupt) => void) | null = null;
  /** After the 200: nothing more is written. */
  private over = false;
  private readonly res: ServerResponse;
  private readonly timings: RelayTimings;
  /** The route's callbacks, dropped once used (they hold the route's request). */
  private o: RelayOptions | null;
  private onEnd: RelayOptions['onEnd'];
  private readonly startMs = Date.now();
  private finish: string | null = null;
  private failure: { status: number; message: string } | null = null;
  /** The error chunk written, as the transcript keeps it. */
  private errorChunk: { code: number; reason: string; message: string } | null = null;
  private draft: Draft | null = null;
  private save: NonNullable<RelayOptions['record']>['save'] | undefined;

  constructor(o: RelayOptions) {
    this.o = o;
    this.onEnd = o.onEnd;
    this.res = o.res;
    this.timings = o.timings;
    if (o.record) {
      this.draft = newDraft();
      recordRequest(this.draft, this.startMs, o.record.message);
      this.save = o.record.save;
    }
    this.state = initialState({
      id: `chatcmpl-${randomBytes(12).toString('hex')}`,
      created: Math.floor(Date.now() / 1000),
      sessionId: o.sessionId,
      toolEvents: o.toolEvents,
    });
  }

  async start(): Promise<RelayResult> {
    const { res, timings } = this;
    res.on('close', this.onClientClose);
    this.routeTimer = setTimeout(this.fire, timings.routeDeadlineMs, 'route_deadline');
    this.budgetTimer = setTimeout(this.fire, timings.turnBudgetMs, 'turn_budget');
    try {
      const pending = this.o!.open();
      this.cancel = pending.cancel;
      const opened: Opened | Interrupt = await this.race(pending.opened);
      if (typeof opened === 'string') throw this.refusal(opened);
      if (opened.kind === 'steered') {
        this.onEnd = undefined;
        this.settle();
        return opened;
      }
      this.feed = opened.events;
      const events = opened.events[Symbol.asyncIterator]();
      for (;;) {
        // A broken daemon stream (socket error, unparsable event) reads as its end.
        const next = await this.race(events.next().catch(toDone));
        if (typeof next === 'string') throw this.refusal(next);
        // A daemon stream that ends with no terminal event was severed: before output, a status.
        const frames = next.done
          ? this.ending({
              reason: 'stream_severed',
              status: 502,
              message: 'the intern stream ended before the turn started',
            })
          : this.map(next.value);
        if (frames.text || frames.end) {
          this.open(frames);
          return { kind: 'streamed' };
        }
      }
    } catch (err) {
      // A refusal the daemon sent in its stream ended the run: its connection may still be reused.
      this.over = true;
      const e = err as { status?: number; message?: string };
      this.failure ??= { status: typeof e.status === 'number' ? e.status : 500, message: e.message ?? 'error' };
      if (this.feed && !this.fired) this.drain();
      else this.cancel();
      this.settle();
      throw err;
    }
  }

  // ---- before the 200 ----

  /** Waits for a promise or the first interrupt, without piling reactions onto a long-lived promise. */
  private race<T>(p: Promise<T>): Promise<T | Interrupt> {
    if (this.fired) return Promise.resolve(this.fired);
    return new Promise((resolve, reject) => {
      this.wake = resolve;
      p.then(resolve, reject);
    });
  }

  private readonly fire = (i: Interrupt): void => {
    if (this.sse) return this.interrupt(i);
    if (this.fired) return;
    this.fired = i;
    this.wake?.(i);
  };

  private readonly onClientClose = () => this.fire('client_gone');

  private refusal(i: Interrupt): ApiError {
    const { timings } = this;
    if (i === 'route_deadline') return routeDeadline(seconds(timings.routeDeadlineMs));
    if (i === 'turn_budget') return turnBudgetSpent(this.budgetMessage());
    return clientClosed();
  }

  private budgetMessage(): string {
    return `the intern did not answer within the turn budget of ${seconds(this.timings.turnBudgetMs)} seconds`;
  }

  // ---- mapping (chunks.ts) and encoding (encode.ts) ----

  private map(events: RunEvent[]): Frames {
    const frames = { text: '', end: false };
    const at = this.draft ? Date.now() : 0;
    for (const e of events) {
      if (this.draft) recordEvent(this.draft, at, e);
      this.add(mapEvent(this.state, e), frames);
    }
    return frames;
  }

  private ending(e: ApiEnding): Frames {
    const frames = { text: '', end: false };
    this.add(mapApiEnding(this.state, e), frames);
    return frames;
  }

  /** A refusal is thrown: it only comes before anything was written. */
  private add(r: { state: MapState; step: Step }, frames: Frames): void {
    this.state = r.state;
    const step = r.step;
    if (step.kind === 'refuse') throw refusalError(step.refusal);
    if (step.kind !== 'write') return;
    for (const c of step.chunks) {
      frames.text += this.encode(c);
      const choice = c.choices[0];
      if (choice?.finish_reason) this.finish = choice.finish_reason;
      if (c.error) {
        this.failure ??= { status: c.error.code, message: c.error.message };
        this.errorChunk ??= { code: c.error.code, reason: c.error.metadata.reason, message: c.error.message };
      }
    }
    if (step.end) frames.end = true;
  }

  // ---- after the 200 ----

  private open(frames: Frames): void {
    this.clearRouteTimer();
    this.res.off('close', this.onClientClose);
    const registry = this.o!.streams;
    this.o!.onOpen();
    this.o = null;
    this.wake = null;
    this.sse = openSse(this.res, {
      keepaliveMs: this.timings.keepaliveMs,
      onGone: this.onGone,
      registry,
      onShutdown: this.onShutdown,
    });
    this.emit(frames);
    if (!this.over) this.feed!.subscribe(this);
  }

  private readonly onGone = () => this.fire('client_gone');
  private readonly onShutdown = () => this.fire('shutdown');

  /** Writes frames, then ends the response, or stops reading the daemon while the client's socket is full. */
  private emit(frames: Frames): void {
    if (frames.end) {
      this.sse!.end(frames.text + DONE_FRAME);
      this.over = true;
      this.settle();
      this.drain();
      return;
    }
    if (!this.sse!.send(frames.text, this.resumeFeed)) this.feed!.pause();
  }

  private readonly resumeFeed = () => this.feed!.resume();

  // ---- the feed's sink (after the 200; while draining, batches are read and dropped) ----

  batch(events: RunEvent[]): void {
    if (this.over) return;
    const frames = this.map(events);
    if (frames.text || frames.end) this.emit(frames);
  }

  /** A daemon stream that ends with no terminal event (or breaks) was severed. */
  end(): void {
    if (this.over) return clearTimeout(this.drainTimer!);
    this.emit(this.ending({ reason: 'stream_severed', status: 502, message: 'the connection to the intern was lost' }));
  }

  error(): void {
    this.end();
  }

  /** Ends the stream, then closes the daemon's (whose end the sink, being over, ignores). */
  private interrupt(i: Interrupt): void {
    if (this.over) return;
    if (i === 'client_gone') {
      this.failure ??= { status: 499, message: 'the client closed the request' };
      this.over = true;
      this.settle();
      this.sse!.destroy();
    } else if (i === 'shutdown') {
      const e = gatewayStopping();
      this.emit(this.ending({ reason: 'stream_severed', status: e.status, message: e.message }));
    } else this.emit(this.ending({ reason: 'timeout', status: 504, message: this.budgetMessage() }));
    // Closing the daemon stream cancels a running run, as a client's disconnect does.
    this.cancel();
  }

  // ---- the end ----

  private settle(): void {
    this.keepTranscript();
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    onEnd?.({
      id: this.state.id,
      model: this.state.model,
      sessionId: this.state.sessionId,
      usage: this.state.usage,
      status: this.failure?.status ?? 200,
      finishReason: this.finish,
      error: this.failure?.message ?? null,
      startMs: this.startMs,
      endMs: Date.now(),
    });
    this.clearRouteTimer();
    clearTimeout(this.budgetTimer!);
    this.budgetTimer = null;
    this.o = null;
    this.res.off('close', this.onClientClose);
  }

  /** Only a request whose stream opened made part of a session: a refusal (a status) did not. */
  private keepTranscript(): void {
    const { draft, save } = this;
    this.draft = null;
    this.save = undefined;
    const sessionId = this.state.sessionId;
    if (!draft || !save || !this.sse || !sessionId) return;
    const entries = recordEnd(draft, Date.now(), {
      finishReason: this.finish,
      error: this.errorChunk,
      model: this.state.model,
      usage: this.state.usage,
    });
    save(sessionId, entries);
  }

  private clearRouteTimer(): void {
    clearTimeout(this.routeTimer!);
    this.routeTimer = null;
  }

  /** The daemon closes its stream right after a terminal or interaction event: reading it to the
   * end lets the connection go back to the pool (bounded, in case a daemon keeps it open). */
  private drain(): void {
    this.drainTimer = setTimeout(this.cancel, DRAIN_MS).unref();
    this.feed!.subscribe(this);
  }
}
