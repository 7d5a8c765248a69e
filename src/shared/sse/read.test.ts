import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseDecoder } from './read.ts';

test('the SSE parser reassembles events split anywhere, with CRLF, comments and [DONE]', () => {
  const stream = ': keepalive\r\n\r\ndata: {"a":1}\n\ndata: {"b":\ndata: 2}\n\n: keepalive\n\ndata: [DONE]\n\n';
  for (let cut = 1; cut < stream.length; cut++) {
    const data: string[] = [];
    let comments = 0;
    const sse = new SseDecoder(
      (d) => data.push(d),
      () => comments++,
    );
    sse.feed(stream.slice(0, cut));
    sse.feed(stream.slice(cut));
    assert.deepEqual(data, ['{"a":1}', '{"b":\n2}', '[DONE]'], `cut at ${cut}`);
    assert.equal(comments, 2);
  }
});

test('bytes split anywhere, inside a character or between CR and LF, decode to the same events', () => {
  const bytes = Buffer.from(
    '\uFEFFdata: é€😀\r\n\r\nevent: x\nid: 3\ndata\ndata:b\r\rdata: tail without a blank line\n',
  );
  for (let cut = 1; cut < bytes.length; cut++) {
    for (let cut2 = cut; cut2 <= bytes.length; cut2 += 3) {
      const data: string[] = [];
      const sse = new SseDecoder((d) => data.push(d));
      sse.feed(bytes.subarray(0, cut));
      sse.feed(bytes.subarray(cut, cut2));
      sse.feed(bytes.subarray(cut2));
      assert.deepEqual(data, ['é€😀', '\nb'], `cuts at ${cut}, ${cut2}`);
    }
  }
});

test('an event that never ends fails the stream once it passes 16 Mi characters', () => {
  const data: string[] = [];
  const sse = new SseDecoder((d) => data.push(d));
  sse.feed('data: small\n\n');
  const line = Buffer.alloc(1 << 20, 'a');
  sse.feed('data: ');
  assert.throws(() => {
    for (let i = 0; i < 17; i++) sse.feed(line);
  }, /SSE event too long/);
  assert.deepEqual(data, ['small']);
});
