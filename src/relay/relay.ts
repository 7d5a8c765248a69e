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
import type { Opened } from './client.ts';
import type { SteeredResponse } from '../protocol/daemon.ts';
import type { RunEvent } from '../protocol/daemon.ts';

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

const clientClosed = () => new ApiError({ status: 499, reason: 'client_closed_request', message: 'the client closed the request' });

export async function relay(o: RelayOptions): Promise<RelayResult> {
  const { timings } = o;
  const ac = new AbortController();
  let fire!: (i: Interrupt) => void;
  const interrupted = new Promise<Interrupt>((resolve) => (fire = resolve));
  let sse: SseWriter | null = null;
  const onClose = () => {
    if (!sse) fire('client_gone');
  };
  o.res.on('close', onClose);
  const routeTimer = setTimeout(() => fire('route_deadline'), timings.routeDeadlineMs);
  const budgetTimer = setTimeout(() => fire('turn_budget'), timings.turnBudgetMs);
  let iterator: AsyncIterator<RunEvent> | null = null;

  const preOpen = (i: Interrupt): ApiError => {
    ac.abort();
    if (i === 'route_deadline') return new ApiError({ status: 408, reason: 'timeout', message: `the request exceeded the route's deadline of ${seconds(timings.routeDeadlineMs)} seconds` });
    if (i === 'turn_budget') return new ApiError({ status: 504, reason: 'timeout', message: `the intern did not answer within the turn budget of ${seconds(timings.turnBudgetMs)} seconds` });
    return clientClosed();
  };

  const write = async (step: Step): Promise<'more' | 'end'> => {
    if (step.kind === 'hold') return 'more';
    if (step.kind === 'refuse') throw refusalError(step.refusal);
    if (!sse) {
      clearTimeout(routeTimer);
      o.onOpen();
      sse = openSse(o.res, { keepaliveMs: timings.keepaliveMs, onGone: () => fire('client_gone') });
    }
    for (const c of step.chunks) await sse.send(c);
    if (!step.end) return 'more';
    sse.done();
    return 'end';
  };

  try {
    const opened = await Promise.race([o.open(ac.signal), interrupted]);
    if (typeof opened === 'string') throw preOpen(opened);
    if (opened.kind === 'steered') return opened;
    iterator = opened.events[Symbol.asyncIterator]();
    let state: MapState = initialState({ id: `chatcmpl-${randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000), sessionId: o.sessionId });
    for (;;) {
      const next = await Promise.race([iterator.next().catch(() => ({ done: true as const, value: undefined })), interrupted]);
      if (typeof next === 'string') {
        if (next === 'client_gone' && sse) {
          ac.abort();
          (sse as SseWriter).destroy();
          return { kind: 'streamed' };
        }
        if (!sse || next !== 'turn_budget') throw preOpen(next);
        const r = mapApiEnding(state, { reason: 'timeout', status: 504, message: `the intern did not answer within the turn budget of ${seconds(timings.turnBudgetMs)} seconds` });
        await write(r.step);
        ac.abort();
        return { kind: 'streamed' };
      }
      const r = next.done
        ? mapApiEnding(state, { reason: 'stream_severed', status: 502, message: sse ? 'the connection to the intern was lost' : 'the intern stream ended before the turn started' })
        : mapEvent(state, next.value);
      state = r.state;
      if ((await write(r.step)) === 'end' || next.done) return { kind: 'streamed' };
    }
  } finally {
    clearTimeout(routeTimer);
    clearTimeout(budgetTimer);
    o.res.off('close', onClose);
    void iterator?.return?.(undefined).catch(() => {});
  }
}
