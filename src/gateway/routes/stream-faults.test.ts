// A provider that fails after its 200, end to end on both routes against a fake upstream on
// loopback: what it sent before the failure reaches the client and the request log, then the error.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../testing/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../inference/fake-upstream.ts';
import { space, upstreamEnv, user } from '../../services/inference-fixtures.ts';

/** The `data:` payloads of a chat SSE body (the terminator kept as the string `[DONE]`). */
function chatEvents(text: string): any[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => (f === 'data: [DONE]' ? '[DONE]' : JSON.parse(f.replace(/^data: /, ''))));
}

/** The events of a /messages SSE body as [event, data] pairs. */
function messageEvents(text: string): [string, any][] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const m = /^event: (\S+)\ndata: (.*)$/s.exec(f);
      assert.ok(m, f);
      return [m[1]!, JSON.parse(m[2]!)];
    });
}

describe('a provider failing after its 200', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({ env: upstreamEnv(up) });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('the text that arrived with a malformed event reaches the client and the log, then the error', async () => {
    const s = await space(gw, 'malformed-mid');
    await s.patch({ is_observability_io_logging_enabled: true });
    await s.credential({ key: 'sk-malformed-mid-1' });
    up.misbehave('sk-malformed-mid-1', 'malformed');
    const message = 'provider openai: the provider sent a malformed stream event';

    const chat = await s.chat({ model: 'openai/gpt-4o', stream: true, messages: [user('hi')] });
    assert.equal(chat.status, 200);
    const evs = chatEvents(chat.body);
    const [first, failed] = evs;
    assert.deepEqual(evs, [
      { id: first.id, object: 'chat.completion.chunk', created: 1, model: 'openai/gpt-4o', choices: [{ index: 0, delta: { role: 'assistant', content: 'partial' }, finish_reason: null }] },
      { id: first.id, object: 'chat.completion.chunk', created: failed.created, model: 'openai/gpt-4o', choices: [{ index: 0, delta: {}, finish_reason: 'error' }], error: { code: 502, message, metadata: { reason: 'turn_failed', retryable: true } } },
      '[DONE]',
    ]);

    const msgs = await s.messages({ model: 'openai/gpt-4o', stream: true, max_tokens: 10, messages: [user('hi')] });
    assert.equal(msgs.status, 200);
    const frames = messageEvents(msgs.body);
    assert.deepEqual(frames.map(([e]) => e), ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error']);
    assert.deepEqual(frames[2]![1], { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial' } });
    assert.deepEqual(frames[4]![1], { type: 'error', error: { type: 'api_error', message } });

    const rows = await s.log();
    assert.deepEqual(
      rows.map((r) => [r.apiStyle, r.status, r.finishReason, r.error, r.responseBody]),
      ['chat', 'messages'].map((style) => [style, 502, null, message, { role: 'assistant', content: 'partial', finish_reason: null, usage: null }]),
    );
    up.misbehave('sk-malformed-mid-1', null);
  });
});
