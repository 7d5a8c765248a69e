// Relays one daemon run to one HTTP response (SPEC §3, §6, §7): holds the status until the first
// output so a refusal can still be a status, then streams chunks through the SSE writer. Owns the
// route deadline (408 before the handler answered), the turn budget (504), and client disconnects
// (closing the daemon stream cancels a running run; after `[DONE]` there is nothing to cancel).
// Keeps nothing after the response ends (DESIGN.md principle 1).
import type { ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors.ts';
import { initialState, mapApiEnding, mapEvent, type MapState, type Refusal, type Step } from './chunks.ts';
import { openSse, type SseWriter } from './sse.ts';
import { chunkEncoder } from './encode.ts';
import type { Opened } from './client.ts';
import type { RunEvent, SteeredResponse } from '../protocol/daemon.ts';

export type RelayTimings = { keepaliveMs: number; routeDeadlineMs: number; turnBudgetMs: number };

export type RelayOptions = {
  res: ServerResponse;
  /** Opens the daemon request; aborting the signal closes it (and so cancels a running run). */
  open: (signal: AbortSignal) => Promise<Opened>;
  timings: RelayTimings;
  /** Called once, just before the 200 is written (the route hands the socket over here). */
  onOpen: () => void;
  /** The session being continued, for a `tool` reply. */
  sessionId?: string;
};

export type RelayResult = { kind: 'steered'; body: SteeredResponse } | { kind: 'streamed' };

type Interrupt = 'route_deadline' | 'turn_budget' | 'client_gone';

const seconds = (ms: number) => Math.max(1, Math.round(ms / 1000));

export function refusalError(r: Refusal): ApiError {
  const headers = r.reason === 'busy' || r.reason === 'rate_limited' ? { 'retry-after': String(r.retryAfter ?? 1) } : undefined;
  return new ApiError({ status: r.status, reason: r.reason, message: r.message, retryable: r.retryable, headers });
}

/** Waits for a promise or the first interrupt, without piling reactions onto a long-lived promise. */
function interrupter() {
  let fired: Interrupt | null = null;
  let wake: ((i: Interrupt) => void) | null = null;
  return {
    fire(i: Interrupt) {
      if (fired) return;
      fired = i;
      wake?.(i);
    },
    race<T>(p: Promise<T>): Promise<T | Interrupt> {
      if (fired) return Promise.resolve(fired);
      return new Promise((resolve, reject) => {
        wake = resolve;
        p.then(resolve, reject);
      });
    },
  };
}

/** Reads a finished daemon stream to its end (bounded, in case a daemon keeps it open). */
async function drain(it: AsyncIterator<unknown>, ac: AbortController) {
  const bound = setTimeout(() => ac.abort(), 5_000).unref();
  try {
    while (!(await it.next()).done);
  } catch {}
  clearTimeout(bound);
}

export async function relay(o: RelayOptions): Promise<RelayResult> {
  const { timings } = o;
  const ac = new AbortController();
  const stop = interrupter();
  let sse: SseWriter | null = null;
  const encode = chunkEncoder();
  const onClose = () => {
    if (!sse) stop.fire('client_gone');
  };
  o.res.on('close', onClose);
  const routeTimer = setTimeout(() => stop.fire('route_deadline'), timings.routeDeadlineMs);
  const budgetTimer = setTimeout(() => stop.fire('turn_budget'), timings.turnBudgetMs);
  let iterator: AsyncIterator<RunEvent[]> | null = null;
  const budgetMessage = `the intern did not answer within the turn budget of ${seconds(timings.turnBudgetMs)} seconds`;

  const preOpen = (i: Interrupt): ApiError => {
    ac.abort();
    if (i === 'route_deadline') return new ApiError({ status: 408, reason: 'timeout', message: `the request exceeded the route's deadline of ${seconds(timings.routeDeadlineMs)} seconds` });
    if (i === 'turn_budget') return new ApiError({ status: 504, reason: 'timeout', message: budgetMessage });
    return new ApiError({ status: 499, reason: 'client_closed_request', message: 'the client closed the request' });
  };

  /** Adds a step's frames to `out`; a refusal is thrown (it only comes before anything was written). */
  const encodeStep = (step: Step, out: { text: string; end: boolean }) => {
    if (step.kind === 'refuse') throw refusalError(step.refusal);
    if (step.kind !== 'write') return;
    for (const c of step.chunks) out.text += encode(c);
    if (step.end) out.end = true;
  };

  /** Writes the frames of several steps at once; true when the response ended. */
  const write = async (out: { text: string; end: boolean }): Promise<boolean> => {
    if (!out.text && !out.end) return false;
    if (!sse) {
      clearTimeout(routeTimer);
      o.onOpen();
      sse = openSse(o.res, { keepaliveMs: timings.keepaliveMs, onGone: () => stop.fire('client_gone') });
    }
    if (out.end) sse.end(out.text + 'data: [DONE]\n\n');
    else await sse.write(out.text);
    return out.end;
  };
  const ending = async (e: Parameters<typeof mapApiEnding>[1]) => {
    const out = { text: '', end: false };
    encodeStep(mapApiEnding(state, e).step, out);
    await write(out);
  };
  let state: MapState = initialState({ id: `chatcmpl-${randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000), sessionId: o.sessionId });

  try {
    const opened = await stop.race(o.open(ac.signal));
    if (typeof opened === 'string') throw preOpen(opened);
    if (opened.kind === 'steered') return opened;
    iterator = opened.events[Symbol.asyncIterator]();
    for (;;) {
      // A broken daemon stream (socket error, unparsable event) reads as its end: severed.
      const next = await stop.race(iterator.next().catch((): IteratorResult<RunEvent[]> => ({ done: true, value: undefined })));
      if (typeof next === 'string') {
        if (!sse) throw preOpen(next);
        ac.abort();
        if (next === 'client_gone') (sse as SseWriter).destroy();
        else await ending({ reason: 'timeout', status: 504, message: budgetMessage });
        return { kind: 'streamed' };
      }
      if (next.done) {
        const message = sse ? 'the connection to the intern was lost' : 'the intern stream ended before the turn started';
        await ending({ reason: 'stream_severed', status: 502, message });
        return { kind: 'streamed' };
      }
      const out = { text: '', end: false };
      for (const event of next.value) {
        const r = mapEvent(state, event);
        state = r.state;
        encodeStep(r.step, out);
      }
      if (await write(out)) return { kind: 'streamed' };
    }
  } finally {
    clearTimeout(routeTimer);
    clearTimeout(budgetTimer);
    o.res.off('close', onClose);
    // The daemon closes its stream right after a terminal or interaction event: reading it to the
    // end lets the connection go back to the pool. Aborted streams were destroyed already.
    if (iterator && !ac.signal.aborted) void drain(iterator, ac);
  }
}
