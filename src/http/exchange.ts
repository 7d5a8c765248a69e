// One HTTP request over undici's dispatch API, for model providers: the status and headers once
// they arrive, then the body (body.ts) as text or as batches of server-sent events. undici's
// request() wraps every body in a Readable stream read through an async iterator, which costs
// more than the rest of a relayed chunk; here the body is taken from undici's callbacks, with
// backpressure (the socket pauses when the consumer is behind) and the caller's abort signal
// reaching the socket.
// May import: undici, ./body. Imported by src/inference.
import type { Dispatcher } from 'undici';
import { Body, type Upstream } from './body.ts';

export type { Upstream } from './body.ts';

type Controller = Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestStart']>>[0];

export function exchange(dispatcher: Dispatcher, request: Dispatcher.DispatchOptions, signal: AbortSignal, toError: (err: unknown) => unknown): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    let controller: Controller | null = null;
    let headersSeen = false;
    const abort = () => controller?.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', abort, { once: true });
    const settle = () => signal.removeEventListener('abort', abort);
    const body = new Body({
      pause: () => controller?.pause(),
      resume: () => controller?.resume(),
      abort: (err) => controller?.abort(err),
    });

    dispatcher.dispatch(request, {
      onRequestStart(c) {
        controller = c;
        if (signal.aborted) abort();
      },
      onResponseStart(_c, statusCode, headers) {
        if (statusCode < 200) return;
        headersSeen = true;
        body.statusCode = statusCode;
        body.headers = headers;
        resolve(body);
      },
      onResponseData(_c, chunk) {
        body.data(chunk);
      },
      onResponseEnd() {
        settle();
        body.end();
      },
      onResponseError(_c, err) {
        settle();
        const e = toError(err);
        body.error(e);
        if (!headersSeen) reject(e);
      },
    });
  });
}
