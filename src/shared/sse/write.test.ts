// The SSE writer against a real socket whose reader stops reading: a full socket is reported by
// send()'s return value, any number of waiting senders share one pair of listeners, and each is
// called once when the client reads again or goes away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { openSse, OpenStreams, type SseOptions, type SseWriter } from './write.ts';

/** A server whose one response is handed to the test, and a raw client that reads only when told. */
async function stalledStream(
  opts: Partial<SseOptions> = {},
): Promise<{ res: ServerResponse; sse: SseWriter; client: Socket; close(): void }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.pause();
  client.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
  const [, res] = (await once(server, 'request')) as [unknown, ServerResponse];
  const sse = openSse(res, { keepaliveMs: 60_000, ...opts });
  return { res, sse, client, close: () => (client.destroy(), server.close()) };
}

const frame = `data: ${'x'.repeat(64 * 1024)}\n\n`;

/** Sends frames until the socket reports full. */
function fill(sse: SseWriter, drained: () => void): number {
  let n = 1;
  while (sse.send(frame, drained)) n++;
  return n;
}

test('senders waiting on a full socket share one drain and one close listener, and each is called once it drains', async () => {
  const s = await stalledStream();
  const closeListeners = s.res.listenerCount('close');
  const calls: string[] = [];
  fill(s.sse, () => calls.push('first'));
  assert.equal(
    s.sse.send(frame, () => calls.push('second')),
    false,
  );
  assert.equal(
    s.sse.send(frame, () => calls.push('third')),
    false,
  );
  assert.equal(s.res.listenerCount('drain'), 1);
  assert.equal(s.res.listenerCount('close'), closeListeners + 1);
  s.client.resume();
  await once(s.res, 'drain');
  assert.deepEqual(calls, ['first', 'second', 'third']);
  assert.equal(s.res.listenerCount('drain'), 0);
  assert.equal(s.res.listenerCount('close'), closeListeners);
  s.close();
});

test('a client that goes away releases the waiting senders, and later sends are dropped', async () => {
  const s = await stalledStream();
  const calls: string[] = [];
  fill(s.sse, () => calls.push('first'));
  const written = s.sse.write(frame).then(() => calls.push('write'));
  const closed = once(s.res, 'close');
  s.client.destroy();
  await written;
  await closed;
  assert.deepEqual(calls, ['first', 'write']);
  assert.equal(s.sse.gone, true);
  assert.equal(
    s.sse.send(frame, () => calls.push('late')),
    true,
    'nothing to wait for once the client is gone',
  );
  assert.deepEqual(calls, ['first', 'write']);
  s.close();
});

test('the open-streams registry holds a stream from its 200 to its end, and endAll asks each open one to end its own way', async () => {
  const registry = new OpenStreams();
  const calls: string[] = [];
  const ended = await stalledStream({ registry, onShutdown: () => calls.push('ended-early') });
  const asked = await stalledStream({ registry, onShutdown: () => asked.sse.end('data: bye\n\n') });
  const cut = await stalledStream({ registry });
  const gone = await stalledStream({ registry, onShutdown: () => calls.push('gone') });
  assert.equal(registry.size, 4);
  ended.sse.end('data: [DONE]\n\n');
  const closed = once(gone.res, 'close');
  gone.client.destroy();
  await closed;
  assert.equal(registry.size, 2);
  const cutClosed = once(cut.res, 'close');
  registry.endAll();
  await cutClosed;
  assert.deepEqual(calls, []);
  assert.equal(registry.size, 0);
  asked.client.resume();
  // The response ends (chunked: the zero-length chunk) after the route's own last frame.
  const text = await new Promise<string>((resolve) => {
    let got = '';
    asked.client.on('data', (d: Buffer) => {
      got += d.toString();
      if (got.endsWith('\r\n0\r\n\r\n')) resolve(got);
    });
  });
  assert.match(text, /data: bye\n\n\r\n0\r\n\r\n$/);
  for (const s of [ended, asked, cut, gone]) s.close();
});
