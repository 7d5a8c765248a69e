// The chat stream's SSE writer: opens the 200, writes `data:` lines, writes `: keepalive` after
// each quiet interval (SPEC §6), ends with `data: [DONE]`, and notices a client that went away.
import type { ServerResponse } from 'node:http';
import type { ChatChunk } from '../schemas/intern-chat.ts';
import { chunkEncoder } from './encode.ts';

export type SseWriter = {
  /** Writes events in one socket write; with `end`, then `data: [DONE]` and ends the response. Resolves once the socket can take more. */
  send(chunks: ChatChunk[], opts?: { end?: boolean }): Promise<void>;
  /** Ends the response without a terminator (the client is gone or the process is stopping). */
  destroy(): void;
  readonly gone: boolean;
};

export function openSse(res: ServerResponse, opts: { keepaliveMs: number; headers?: Record<string, string>; onGone: () => void }): SseWriter {
  let gone = false;
  let finished = false;
  const encode = chunkEncoder();
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...opts.headers,
  });
  res.flushHeaders();
  const keepalive = setInterval(() => {
    if (!gone && !finished) res.write(': keepalive\n\n');
  }, opts.keepaliveMs);
  keepalive.unref();
  const stop = () => clearInterval(keepalive);
  res.on('close', () => {
    stop();
    if (!finished) {
      gone = true;
      opts.onGone();
    }
  });
  const write = (text: string): Promise<void> => {
    if (gone || finished) return Promise.resolve();
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
  };
  return {
    send(chunks, o = {}) {
      let text = '';
      for (const c of chunks) text += encode(c);
      if (!o.end) return text ? write(text) : Promise.resolve();
      if (gone || finished) return Promise.resolve();
      finished = true;
      stop();
      res.end(text + 'data: [DONE]\n\n');
      return Promise.resolve();
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
