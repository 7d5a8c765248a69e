// The one server-sent-events writer, for the gateway's streams (intern chat, model requests in
// every API style) and the daemon's run streams: the frames (`data:`, named events, `[DONE]`),
// and one object per open stream that opens the 200 with the stream headers and the caller's own
// (request id), writes with backpressure, writes `: keepalive` after each quiet interval
// (docs/reference/intern-chat.md#events-and-keepalive), ends once, and notices a client that went
// away. Callers compose the frames and decide how a stream ends (a finish or error chunk, then
// the final chunk and `[DONE]`); this owns the socket. A gateway's open streams are kept in one
// OpenStreams, so its shutdown can end each the way its route ends a failure.
// May import: node.
import type { ServerResponse } from 'node:http';

/** The terminator of an OpenAI-style stream. */
export const DONE = 'data: [DONE]\n\n';

/** One `data:` frame, with the event's id when it has one (the daemon's run events, for resuming). */
export const dataFrame = (data: unknown, id?: number): string =>
  id === undefined ? `data: ${JSON.stringify(data)}\n\n` : `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;

/** One named event (`event:` then `data:`), as Anthropic and the Responses API stream them. */
export const eventFrame = (event: string, data: unknown): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** A chat-completion chunk from a provider's own text after its `model` field (`tail`), behind this
 * gateway's id and model (both already JSON): the chunk is not serialised again. */
export const tailFrame = (o: { id: string; model: string; created: number; tail: string }): string =>
  `data: {"id":${o.id},"object":"chat.completion.chunk","created":${o.created},"model":${o.model},${o.tail}\n\n`;

const KEEPALIVE = ': keepalive\n\n';

export type SseWriter = {
  /** Writes text (whole SSE frames) in one socket write; resolves once the socket can take more or the client is gone. */
  write(text: string): Promise<void>;
  /** write() without a promise: false when the socket is full, and then `drained` is called once it can take more or the client is gone. */
  send(text: string, drained: () => void): boolean;
  /** Writes the last frames and ends the response; nothing is written after. */
  end(text: string): void;
  /** Ends the response without a terminator (the client is gone, or the stream was abandoned). */
  destroy(): void;
  readonly gone: boolean;
};

export type SseOptions = {
  /** Silence after which a `: keepalive` comment is written. */
  keepaliveMs: number;
  /** Headers the route set before the stream opened (e.g. x-request-id). */
  headers?: Record<string, string | string[] | number | undefined>;
  /** Called once if the client goes away before the stream ended. */
  onGone?: () => void;
  /** The gateway's open streams; `onShutdown` is how this one ends when the gateway stops. */
  registry?: OpenStreams;
  onShutdown?: () => void;
};

/** A gateway's open streams, so that its shutdown ends each one the way its route ends a failure. */
export class OpenStreams {
  private readonly open = new Set<SseStream>();
  get size(): number {
    return this.open.size;
  }
  add(s: SseStream): void {
    this.open.add(s);
  }
  delete(s: SseStream): void {
    this.open.delete(s);
  }
  /** Asks every open stream to end (each writes its error chunk, final frames and terminator). */
  endAll(): void {
    for (const s of [...this.open]) s.shutdown();
  }
}

const RESOLVED = Promise.resolve();
const noop = () => {};

export function openSse(res: ServerResponse, opts: SseOptions): SseWriter {
  return new SseStream(res, opts);
}

/** One object per open stream, its handlers as fields and its methods on the prototype. */
class SseStream implements SseWriter {
  gone = false;
  private finished = false;
  private readonly keepalive: NodeJS.Timeout;
  private readonly onGone: (() => void) | undefined;
  private readonly registry: OpenStreams | undefined;
  private readonly onShutdown: (() => void) | undefined;
  /** Callers waiting for the socket to drain (or close). */
  private waiting: (() => void)[] | null = null;

  constructor(
    private readonly res: ServerResponse,
    opts: SseOptions,
  ) {
    this.onGone = opts.onGone;
    this.registry = opts.registry;
    this.onShutdown = opts.onShutdown;
    // The headers leave with the first frame, in one write; the route's own first, then the stream's.
    const head: Record<string, string | string[] | number> = {};
    for (const k in opts.headers) {
      const v = opts.headers[k];
      if (v !== undefined) head[k] = v;
    }
    head['content-type'] = 'text/event-stream; charset=utf-8';
    head['cache-control'] = 'no-cache';
    head.connection = 'keep-alive';
    head['x-accel-buffering'] = 'no';
    res.writeHead(200, head);
    this.keepalive = setInterval(this.tick, opts.keepaliveMs).unref();
    res.on('close', this.onClose);
    this.registry?.add(this);
  }

  /** The gateway is stopping: the route ends the stream its own way, or it is cut off. */
  shutdown(): void {
    if (this.gone || this.finished) return;
    if (this.onShutdown) this.onShutdown();
    else this.destroy();
  }

  private readonly tick = () => {
    if (!this.gone && !this.finished) this.res.write(KEEPALIVE);
  };

  private readonly onClose = () => {
    clearInterval(this.keepalive);
    this.registry?.delete(this);
    if (!this.finished) {
      this.gone = true;
      this.onGone?.();
    }
  };

  write(text: string): Promise<void> {
    let resolve: () => void = noop;
    if (this.send(text, () => resolve())) return RESOLVED;
    return new Promise((r) => (resolve = r));
  }

  send(text: string, drained: () => void): boolean {
    if (this.gone || this.finished || !text) return true;
    this.keepalive.refresh();
    if (this.res.write(text)) return true;
    // A pushing caller may send again before the drain (what one network read already held):
    // one pair of listeners however many wait.
    if (this.waiting) {
      this.waiting.push(drained);
      return false;
    }
    this.waiting = [drained];
    this.res.on('drain', this.settle);
    this.res.on('close', this.settle);
    return false;
  }

  private readonly settle = () => {
    const waiting = this.waiting ?? [];
    this.waiting = null;
    this.res.off('drain', this.settle);
    this.res.off('close', this.settle);
    for (const f of waiting) f();
  };

  end(text: string): void {
    if (this.gone || this.finished) return;
    this.finished = true;
    clearInterval(this.keepalive);
    this.registry?.delete(this);
    this.res.end(text);
  }

  destroy(): void {
    clearInterval(this.keepalive);
    this.registry?.delete(this);
    if (!this.finished) {
      this.finished = true;
      this.res.destroy();
    }
  }
}
