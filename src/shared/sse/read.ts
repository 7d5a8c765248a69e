// The one server-sent-events decoder, for the gateway (model providers' streams, the daemon link),
// the runtime's agent, the CLI, the console and the tests: eventsource-parser (the WHATWG
// EventSource rules) behind a streaming UTF-8 decoder, so bytes or text split anywhere go in and
// each event's data comes out. One bound, for a hostile or broken upstream: an event whose data
// and unfinished line pass 16 Mi characters fails the stream (feed throws) rather than growing
// without end; a provider's event may carry a base64 image, hence so large.
// May import: eventsource-parser.
import { createParser, type EventSourceParser } from 'eventsource-parser';

const MAX_EVENT = 16 << 20;

export class SseDecoder {
  private readonly parser: EventSourceParser;
  private readonly utf8 = new TextDecoder();

  /** onData: each event's data (its `data:` lines joined by LF), once the blank line that ends it
   * arrives; onComment: each comment line (`: keepalive`), for a reader that wants a sign of life. */
  constructor(onData: (data: string) => void, onComment?: (comment: string) => void) {
    this.parser = createParser({
      onEvent: (e) => onData(e.data),
      onComment,
      maxBufferSize: MAX_EVENT,
      onError: (err) => {
        if (err.type === 'max-buffer-size-exceeded') throw new Error('SSE event too long');
      },
    });
  }

  /** Bytes (split anywhere, even inside a character) or text; calls the handlers for each event they complete. An error a handler throws propagates. */
  feed(chunk: Uint8Array | string): void {
    this.parser.feed(typeof chunk === 'string' ? chunk : this.utf8.decode(chunk, { stream: true }));
  }
}
