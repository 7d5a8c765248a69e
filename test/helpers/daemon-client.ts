// A client of the daemon protocol for tests and the benchmark: real HTTP, SSE parsed with
// src/shared/sse/read.ts, events validated against the protocol schemas.
import { SseDecoder } from '../../src/shared/sse/read.ts';
import { daemonPaths, parseRunEvent, type RunEvent } from '../../src/shared/daemon-protocol.ts';

export type Opened =
  | { status: number; headers: Headers; json: unknown; events: null; close(): void }
  | { status: 200; headers: Headers; json: null; events: AsyncGenerator<RunEvent>; close(): void };

export class DaemonClient {
  constructor(
    readonly url: string,
    private readonly secret: string,
  ) {}

  /** Opens a request; an SSE answer is returned as a live event iterator. */
  async open(method: string, path: string, body?: unknown, secret = this.secret): Promise<Opened> {
    const ac = new AbortController();
    const res = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: ac.signal,
    });
    const close = () => ac.abort();
    if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
      return { status: res.status, headers: res.headers, json: await res.json(), events: null, close };
    }
    return { status: 200, headers: res.headers, json: null, events: readEvents(res, ac.signal), close };
  }

  /** A request whose stream is read to its end: status, JSON body or every event. */
  async collect(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; events: RunEvent[]; headers: Headers }> {
    const o = await this.open(method, path, body);
    const events: RunEvent[] = [];
    if (o.events) for await (const e of o.events) events.push(e);
    return { status: o.status, json: o.json, events, headers: o.headers };
  }

  turn(body: { session_id?: string; prompt: string; approval_mode?: 'manual' | 'self-drive' }) {
    return this.collect('POST', daemonPaths.turns, body);
  }

  answer(sessionId: string, interactionId: string, answer: string) {
    return this.collect('POST', daemonPaths.answer(sessionId, interactionId), { answer });
  }

  async json(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const o = await this.open(method, path, body ?? (method === 'POST' ? {} : undefined));
    return { status: o.status, json: o.json };
  }
}

async function* readEvents(res: Response, signal: AbortSignal): AsyncGenerator<RunEvent> {
  const queue: RunEvent[] = [];
  const parser = new SseDecoder((data) => void queue.push(parseRunEvent(data)));
  try {
    for await (const chunk of res.body ?? []) {
      parser.feed(chunk as Uint8Array);
      while (queue.length) yield queue.shift()!;
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
  while (queue.length) yield queue.shift()!;
}

/** Event types in order, with text and reasoning chunks joined and a tool call's status, for exact sequence assertions. */
export function shape(events: RunEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    const label =
      e.type === 'text' || e.type === 'reasoning'
        ? `${e.type}:${e.text}`
        : e.type === 'tool'
          ? `tool:${e.status}`
          : e.type;
    const prev = out.at(-1);
    if ((e.type === 'text' || e.type === 'reasoning') && prev?.startsWith(`${e.type}:`))
      out[out.length - 1] = prev + e.text;
    else out.push(label);
  }
  return out;
}
