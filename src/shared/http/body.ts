// A response body as the gateway's hot clients read it, whatever carries the bytes: the whole
// body as text, or its server-sent events in batches (one batch per network read, so a relay
// writes them in one go), with backpressure through the transport's pause/resume. The batches
// are pulled (an async iterator) or pushed to a Sink: the intern relay subscribes once its
// stream is open, so a relayed event costs no promise. One object per open stream with its
// methods on the prototype, since an idle stream is mostly this object.
// May import: ../sse/read.ts, node. Used by h1.ts (the daemon link) and src/gateway/inference/providers/http.ts
// (model providers, through undici).
import { SseDecoder } from '../sse/read.ts';

export type Upstream = {
  statusCode: number;
  /** Until events() is called: an event stream may stay open for minutes, and its head (kept whole by the slices of it that header values are) is read before. */
  headers: Record<string, string | string[] | undefined>;
  /** The whole body as text. */
  text(): Promise<string>;
  /** The body's SSE events, one batch per network read (never empty); `map` turns an event's data into a T, or null to skip it. */
  events<T>(map: (data: string) => T | null): Feed<T>;
};

/** Where a subscribed body pushes its batches; exactly one of end() and error() comes last. */
export type Sink<T> = { batch(items: T[]): void; end(): void; error(err: unknown): void };

/** A body's events: pulled as an async iterator, or pushed to one sink from some point on. */
export interface Feed<T> extends AsyncIterable<T[]> {
  /** From now on every batch goes to `sink` as it arrives (those already queued at once); next() is not used after this. */
  subscribe(sink: Sink<T>): void;
  /** Backpressure for a subscriber: stops reading from the transport until resume(). */
  pause(): void;
  resume(): void;
}

/** What the body needs of its transport. */
export type Flow = { pause(): void; resume(): void; abort(err: Error): void };

const HIGH_WATER = 16;
const NO_HEADERS: Upstream['headers'] = Object.freeze({});

export class Body<T = unknown> implements Upstream, AsyncIterator<T[]>, Feed<T> {
  statusCode = 0;
  headers: Record<string, string | string[] | undefined> = {};
  private failure: unknown = null;
  private ended = false;
  private paused = false;
  private buffered: Buffer[] | null = [];
  private wake: (() => void) | null = null;
  /** A consumer waiting in next(): its promise's resolve, kept as is (an idle stream holds just this). */
  private waiter: ((r: Promise<IteratorResult<T[]>>) => void) | null = null;
  private queue: T[][] = [];
  private batch: T[] = [];
  private sse: SseDecoder | null = null;
  private sink: Sink<T> | null = null;

  constructor(private readonly flow: Flow) {}

  // ---- transport side ----
  /** Body bytes (one network read may carry several pieces, e.g. HTTP chunks); flush() ends the read. */
  data(chunk: Buffer): void {
    if (this.failure) return;
    if (this.buffered) {
      this.buffered.push(chunk);
      return;
    }
    try {
      this.sse!.feed(chunk);
    } catch (err) {
      // The events this read decoded before the bad one were sent before it: they go first.
      this.flush();
      this.fail(err);
    }
  }

  /** The end of one network read: its events leave as one batch (so a relay writes them in one write). */
  flush(): void {
    if (this.failure || !this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    if (this.sink) return this.sink.batch(batch);
    this.queue.push(batch);
    if (this.queue.length >= HIGH_WATER) this.pause();
    this.notify();
  }

  end(): void {
    this.flush();
    this.ended = true;
    this.notify();
  }

  /** The transport failed; the first failure is the one reported, after the events its read had decoded. */
  error(err: unknown): void {
    this.flush();
    this.failure ??= err;
    this.notify();
  }

  // ---- consumer side ----
  text(): Promise<string> {
    return new Promise((resolve, reject) => {
      const done = () =>
        this.failure
          ? reject(this.failure)
          : this.ended
            ? resolve(Buffer.concat(this.buffered ?? []).toString('utf8'))
            : (this.wake = done);
      done();
    });
  }

  events<U>(map: (data: string) => U | null): Feed<U> {
    const self = this as unknown as Body<U>;
    self.headers = NO_HEADERS;
    self.sse = new SseDecoder((data) => {
      const v = map(data);
      if (v !== null) self.batch.push(v);
    });
    const early = self.buffered!;
    self.buffered = null;
    for (const chunk of early) self.data(chunk);
    self.flush();
    return self;
  }

  subscribe(sink: Sink<T>): void {
    this.sink = sink;
    // Resumed first: the sink may pause again while it takes the queued batches.
    this.resume();
    for (let b = this.queue.shift(); b; b = this.queue.shift()) sink.batch(b);
    this.notify();
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.flow.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.flow.resume();
  }

  [Symbol.asyncIterator](): AsyncIterator<T[]> {
    return this;
  }

  next(): Promise<IteratorResult<T[]>> {
    const b = this.queue.shift();
    if (b) {
      if (this.queue.length < HIGH_WATER / 2) this.resume();
      return Promise.resolve({ done: false, value: b });
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => (this.waiter = resolve));
  }

  /** A consumer that stops early gives the connection up rather than reading the rest. */
  return(): Promise<IteratorResult<T[]>> {
    if (!this.ended) this.fail(new Error('the consumer stopped reading'));
    return Promise.resolve({ done: true, value: undefined });
  }

  private fail(err: unknown): void {
    this.failure ??= err;
    this.flow.abort(err instanceof Error ? err : new Error('failed'));
    this.notify();
  }

  private notify(): void {
    const sink = this.sink;
    if (sink) {
      if (this.failure) sink.error(this.failure);
      else if (this.ended) sink.end();
      if (this.failure || this.ended) this.sink = null;
      return;
    }
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.(this.next());
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
