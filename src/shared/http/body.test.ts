// Body's two ways of handing over SSE batches: pulled through next(), and pushed to a subscribed
// sink, with the switch between them mid-stream (as the intern relay does at its 200). The
// transport is driven directly; h1.test.ts covers Body behind real sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Body, type Flow, type Sink } from './body.ts';

function setup() {
  const flow = {
    calls: [] as string[],
    pause: () => flow.calls.push('pause'),
    resume: () => flow.calls.push('resume'),
    abort: (e: Error) => flow.calls.push(`abort ${e.message}`),
  };
  const body = new Body(flow as Flow);
  const feed = body.events((data) => {
    if (data === 'bad') throw new Error('bad event');
    return data === 'skip' ? null : data;
  });
  const got: string[] = [];
  const sink: Sink<string> = {
    batch: (b) => got.push(b.join(',')),
    end: () => got.push('end'),
    error: (e) => got.push(`error ${(e as Error).message}`),
  };
  /** One network read. */
  const send = (...pieces: string[]) => {
    for (const p of pieces) body.data(Buffer.from(p));
    body.flush();
  };
  return { flow, body, feed, got, sink, send };
}

test('pulled, then pushed: queued batches first, in order, then each batch as it arrives, then one end', async () => {
  const { feed, body, got, sink, send } = setup();
  const it = feed[Symbol.asyncIterator]();
  send('data: a\n\ndata: b\n\n');
  assert.deepEqual(await it.next(), { done: false, value: ['a', 'b'] });
  send('data: c\n\n');
  send('data: skip\n\ndata: d\n\n');
  feed.subscribe(sink);
  assert.deepEqual(got, ['c', 'd']);
  send('data: e\n\ndata: f');
  assert.deepEqual(got, ['c', 'd', 'e'], 'delivered in the same call as the read, the partial event kept');
  send('\n\n');
  body.end();
  body.end();
  assert.deepEqual(got, ['c', 'd', 'e', 'f', 'end']);
});

test('the events of one network read leave as one batch, however many pieces (HTTP chunks) carried them', async () => {
  const { feed, got, sink, send } = setup();
  const it = feed[Symbol.asyncIterator]();
  send('data: a\n\n', 'data: b\n\n', 'data: skip\n\nda');
  assert.deepEqual(await it.next(), { done: false, value: ['a', 'b'] });
  feed.subscribe(sink);
  send('ta: c\n\n', 'data: d\n\n');
  send('data: skip\n\n');
  assert.deepEqual(got, ['c,d'], 'a read with nothing to deliver delivers nothing');
});

test('a subscriber hears an end that came before it subscribed, after the batches queued before it', () => {
  const { feed, body, got, sink, send } = setup();
  send('data: a\n\n');
  body.end();
  feed.subscribe(sink);
  assert.deepEqual(got, ['a', 'end']);
});

test('a transport failure reaches the sink once, as the first failure, and later bytes are dropped', () => {
  const { feed, body, got, sink, send } = setup();
  feed.subscribe(sink);
  send('data: a\n\n');
  body.error(new Error('reset'));
  body.error(new Error('second'));
  send('data: b\n\n');
  body.end();
  assert.deepEqual(got, ['a', 'error reset']);
});

test('a bad event fails the stream after the events its read decoded before it, pulled or pushed', async () => {
  const pulled = setup();
  const it = pulled.feed[Symbol.asyncIterator]();
  pulled.send('data: a\n\ndata: b\n\ndata: bad\n\ndata: c\n\n');
  assert.deepEqual(await it.next(), { done: false, value: ['a', 'b'] });
  await assert.rejects(it.next(), /^Error: bad event$/);
  assert.deepEqual(pulled.flow.calls, ['abort bad event']);

  const pushed = setup();
  pushed.feed.subscribe(pushed.sink);
  pushed.send('data: a\n\n', 'data: b\n\ndata: bad\n\n');
  pushed.send('data: c\n\n');
  assert.deepEqual(pushed.got, ['a,b', 'error bad event']);
});

test('a transport failure within a read comes after the events that read decoded', () => {
  const { feed, body, got, sink } = setup();
  feed.subscribe(sink);
  body.data(Buffer.from('data: a\n\ndata: b\n\n'));
  body.error(new Error('bad chunk framing'));
  assert.deepEqual(got, ['a,b', 'error bad chunk framing']);
});

test('an unparsable stream fails the sink and aborts the transport', () => {
  const { feed, got, sink, send, flow } = setup();
  feed.subscribe(sink);
  send(`data: ${'x'.repeat(17 * 1024 * 1024)}`);
  assert.equal(got.length, 1);
  assert.match(got[0]!, /^error /);
  assert.equal(flow.calls.filter((c) => c.startsWith('abort')).length, 1);
});

test('backpressure: the subscriber pauses and resumes the transport, each once however often it asks', () => {
  const { feed, got, sink, send, flow } = setup();
  feed.subscribe(sink);
  feed.pause();
  feed.pause();
  send('data: a\n\n');
  feed.resume();
  feed.resume();
  assert.deepEqual(flow.calls, ['pause', 'resume']);
  assert.deepEqual(got, ['a']);
});

test('a body paused because its pull queue filled up is resumed when a sink takes the queue over', () => {
  const { feed, got, sink, send, flow } = setup();
  for (let i = 0; i < 16; i++) send(`data: ${i}\n\n`);
  assert.deepEqual(flow.calls, ['pause']);
  const seen: string[] = [];
  feed.subscribe({ ...sink, batch: (b) => (seen.push(...b), b[0] === '0' ? feed.pause() : undefined) });
  assert.deepEqual(
    seen,
    Array.from({ length: 16 }, (_, i) => String(i)),
  );
  assert.deepEqual(
    flow.calls,
    ['pause', 'resume', 'pause'],
    'resumed before the queue is handed over, so the sink may pause again',
  );
  assert.deepEqual(got, []);
});

test('headers are let go once the body is read as events (an event stream may stay open for minutes)', () => {
  const body = new Body({ pause() {}, resume() {}, abort() {} });
  body.headers = { 'content-type': 'text/event-stream', date: 'Sat, 21 Nov 2026 22:00:00 GMT' };
  assert.equal(body.headers['content-type'], 'text/event-stream');
  body.events((d) => d);
  assert.deepEqual(body.headers, {});
});
