// The one SSE writer of the gateway's streams (intern chat, model requests in both API styles):
// opens the 200 with the stream headers and the route's own (request id), writes frames with
// backpressure, writes `: keepalive` after each quiet interval (SPEC §6), ends once, and notices
// a client that went away. Callers compose the frames; this owns the socket.
import type { ServerResponse } from 'node:http';
import { flat } from './encode.ts';

export type SseWriter = {
  /** Writes text (whole SSE frames) in one socket write; resolves once the socket can take more or the client is gone. */
  write(text: string): Promise<void>;
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
};

export function openSse(res: ServerResponse, opts: SseOptions): SseWriter {
  let gone = false;
  let finished = false;
  const headers = Object.fromEntries(Object.entries(opts.headers ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string | string[] | number>;
  // The headers leave with the first frame, in one write.
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  // node:http keeps the response head for the response's lifetime as the ~25 pieces it was
  // concatenated from (~0.8 KB per open stream); the same text, flat, is a third of that.
  const held = res as unknown as { _header?: unknown };
  if (typeof held._header === 'string') held._header = flat(held._header);
  const keepalive = setInterval(() => {
    if (!gone && !finished) res.write(': keepalive\n\n');
  }, opts.keepaliveMs);
  keepalive.unref();
  const stop = () => clearInterval(keepalive);
  res.on('close', () => {
    stop();
    if (!finished) {
      gone = true;
      opts.onGone?.();
    }
  });
  return {
    write(text) {
      if (gone || finished || !text) return Promise.resolve();
      keepalive.refresh();
      if (res.write(text)) return Promise.resolve();
      return new Promise((resolve) => {
        const settle = () => {
          res.off('drain', settle);
          res.off('close', settle);
          resolve();
        };
        res.on('drain', settle);
        res.on('close', settle);
      });
    },
    end(text) {
      if (gone || finished) return;
      finished = true;
      stop();
      res.end(text);
    },
    destroy() {
      stop();
      if (!finished) {
        finished = true;
        res.destroy();
      }
    },
    get gone() {
      return gone;
    },
  };
}
