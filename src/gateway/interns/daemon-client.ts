// The gateway's HTTP client for one intern's daemon (docs/daemon-protocol.md): start a turn,
// answer an interaction, cancel. Refusals become ApiErrors carrying the daemon's status, reason,
// retryability and Retry-After; a daemon that cannot be reached is `502 intern_unreachable`.
// May import: src/shared/daemon-protocol.ts (the only daemon module the gateway sees), the error registry, src/shared/http.
import {
  daemonPaths,
  HibernateResponse,
  parseRunEvent,
  RefusalBody,
  SteeredResponse,
  type RunEvent,
  type TurnRequest,
} from '../../shared/daemon-protocol.ts';
import { ApiError, internRefused, internRejected, internUnreachable } from '../errors.ts';
import { H1Client } from '../../shared/http/h1.ts';
import type { Feed, Upstream } from '../../shared/http/body.ts';

export type DaemonTarget = { baseUrl: string; secret: string };

/** A stream yields the events of each network read together, so the relay writes them in one go. */
export type Opened = { kind: 'steered'; body: SteeredResponse } | { kind: 'stream'; events: Feed<RunEvent> };

/** A daemon request under way. Cancelling closes its connection, at any point: before the answer, or mid-stream (which cancels a running run). */
export type Pending = { opened: Promise<Opened>; cancel(): void };

// Timers are the relay's (route deadline, turn budget); streams may idle for minutes. The lean
// HTTP/1.1 client because an open chat stream holds its daemon connection for as long as it is open.
const client = new H1Client({ connectTimeoutMs: 5_000 });

/** A transport failure: the daemon could not be reached, or its answer broke off. */
const toError = (err: unknown) => internUnreachable(err);

/** Nothing listens at the daemon's address (or its socket is gone): it is gone, not slow or cut off (worth a health probe). */
export const daemonRefusedConnection = (err: unknown): boolean =>
  err instanceof ApiError &&
  err.reason === 'intern_unreachable' &&
  ['ECONNREFUSED', 'ENOENT'].includes((err.cause as { code?: string } | undefined)?.code ?? '');

/** A daemon refusal as the same documented error; a 401 means our stored secret is wrong. */
async function refusal(res: Upstream): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let parsed: RefusalBody | null = null;
  try {
    parsed = RefusalBody.parse(JSON.parse(text));
  } catch {}
  const meta = parsed?.error.metadata;
  if (!parsed || !meta) return internRejected(res.statusCode);
  // Busy always carries Retry-After (docs/reference/intern-chat.md#statuses-and-reasons), even if a
  // daemon left it out.
  const given = res.headers['retry-after'];
  const retryAfter = typeof given === 'string' ? given : meta.reason === 'busy' ? '1' : undefined;
  return internRefused({
    status: parsed.error.code,
    reason: meta.reason,
    retryable: meta.retryable,
    message: parsed.error.message,
    retryAfter,
  });
}

async function opened(res: Upstream): Promise<Opened> {
  if (res.statusCode === 202) return { kind: 'steered', body: SteeredResponse.parse(JSON.parse(await res.text())) };
  if (res.statusCode !== 200) throw await refusal(res);
  return { kind: 'stream', events: res.events(parseRunEvent) };
}

/** One POST to the daemon whose answer is a run's event stream (or a refusal, or a steer). */
function openStream(target: DaemonTarget, path: string, body: unknown): Pending {
  const req = {
    base: target.baseUrl,
    path,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${target.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
  const call = client.start(req, toError);
  return { opened: call.response.then(opened), cancel: call.cancel };
}

export function startTurn(target: DaemonTarget, body: TurnRequest): Pending {
  return openStream(target, daemonPaths.turns, body);
}

export function answerInteraction(
  target: DaemonTarget,
  opts: { sessionId: string; interactionId: string; answer: string },
): Pending {
  return openStream(target, daemonPaths.answer(opts.sessionId, opts.interactionId), { answer: opts.answer });
}

/** Asks a daemon to go to sleep if it has been idle for `idleMs` (docs/fleet.md): true when it
 * agreed (and now refuses new work), false when it is busy or cannot be reached. */
export async function askToHibernate(target: DaemonTarget, idleMs: number, timeoutMs = 5_000): Promise<boolean> {
  try {
    const body = JSON.stringify({ idle_ms: idleMs });
    const res = await client.request(
      {
        base: target.baseUrl,
        path: daemonPaths.hibernate,
        method: 'POST',
        headers: { authorization: `Bearer ${target.secret}`, 'content-type': 'application/json' },
        body,
      },
      AbortSignal.timeout(timeoutMs),
      (err) => err,
    );
    const text = await res.text();
    return res.statusCode === 200 && HibernateResponse.safeParse(JSON.parse(text)).success;
  } catch {
    return false;
  }
}

export async function daemonHealthy(baseUrl: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const res = await client.request(
      { base: baseUrl, path: daemonPaths.health, method: 'GET', headers: {} },
      AbortSignal.timeout(timeoutMs),
      (err) => err,
    );
    const body = JSON.parse(await res.text()) as { status?: string } | null;
    return res.statusCode === 200 && body?.status === 'ok';
  } catch {
    return false;
  }
}
