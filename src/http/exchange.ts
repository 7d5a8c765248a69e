// One HTTP request over undici's dispatch API, for the gateway's two hot clients (model providers,
// intern daemons): the status and headers once they arrive, then the body as text or as batches of
// server-sent events. undici's request() wraps every body in a Readable stream read through an
// async iterator, which costs more than the rest of a relayed chunk and holds memory per open
// stream; here the body is taken from undici's callbacks, with backpressure (the socket pauses
// when the consumer is behind) and the caller's abort signal reaching the socket.
// May import: undici, eventsource-parser, node. Imported by src/inference and src/relay.
import type { Dispatcher } from 'undici';
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';

export type Upstream = {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The whole body as text. */
  text(): Promise<string>;
  /** The body's SSE events, one batch per network read (never empty); `map` turns an event's data into a T, or null to skip it. */
  events<T>(map: (data: string) => T | null): AsyncIterable<T[]>;
};

type Controller = Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestStart']>>[0];

const HIGH_WATER = 16;

export function exchange(dispatcher: Dispatcher, request: Dispatcher.DispatchOptions, signal: AbortSignal, toError: (err: unknown) => unknown): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    let controller: Controller | null = null;
    let failure: unknown = null;
    let ended = false;
    let headersSeen = false;
    const buffered: Buffer[] = [];
    let onData: (chunk: Buffer) => void = (chunk) => void buffered.push(chunk);
    let wake: (() => void) | null = null;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const abort = () => controller?.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', abort, { once: true });
    const settle = () => signal.removeEventListener('abort', abort);
    const fail = (err: unknown) => {
      failure ??= err;
      controller?.abort(err instanceof Error ? err : new Error('failed'));
      notify();
    };

    const response: Upstream = {
      statusCode: 0,
      headers: {},
      text() {
        return new Promise((res, rej) => {
          const done = () => (failure ? rej(failure) : ended ? res(Buffer.concat(buffered).toString('utf8')) : (wake = done));
          done();
        });
      },
      events<T>(map: (data: string) => T | null): AsyncIterable<T[]> {
        const queue: T[][] = [];
        let batch: T[] = [];
        const parser = createParser({
          onEvent: (e) => {
            const v = map(e.data);
            if (v !== null) batch.push(v);
          },
        });
        const decoder = new StringDecoder('utf8');
        const feed = (chunk: Buffer) => {
          if (failure) return;
          try {
            parser.feed(decoder.write(chunk));
          } catch (err) {
            return fail(err);
          }
          if (!batch.length) return;
          queue.push(batch);
          batch = [];
          if (queue.length >= HIGH_WATER) controller?.pause();
          notify();
        };
        for (const chunk of buffered.splice(0)) feed(chunk);
        onData = feed;
        const next = (): Promise<IteratorResult<T[]>> => {
          const b = queue.shift();
          if (b) {
            if (queue.length < HIGH_WATER / 2 && controller?.paused) controller.resume();
            return Promise.resolve({ done: false, value: b });
          }
          if (failure) return Promise.reject(failure);
          if (ended) return Promise.resolve({ done: true, value: undefined });
          return new Promise((res) => (wake = () => res(next())));
        };
        return {
          [Symbol.asyncIterator]: () => ({
            next,
            // A consumer that stops early gives the connection up rather than reading the rest.
            return: () => {
              if (!ended) fail(new Error('the consumer stopped reading'));
              return Promise.resolve({ done: true, value: undefined });
            },
          }),
        };
      },
    };

    dispatcher.dispatch(request, {
      onRequestStart(c) {
        controller = c;
        if (signal.aborted) abort();
      },
      onResponseStart(_c, statusCode, headers) {
        if (statusCode < 200) return;
        headersSeen = true;
        response.statusCode = statusCode;
        response.headers = headers;
        resolve(response);
      },
      onResponseData(_c, chunk) {
        onData(chunk);
      },
      onResponseEnd() {
        ended = true;
        settle();
        notify();
      },
      onResponseError(_c, err) {
        settle();
        const e = failure ?? toError(err);
        failure = e;
        if (!headersSeen) reject(e);
        notify();
      },
    });
  });
}
