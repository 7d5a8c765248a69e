// A provider that fails after its 200, end to end on both routes against a fake upstream on
// loopback: what it sent before the failure reaches the client and the request log, then the error,
// and a key the provider quotes in that error reaches neither.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { anthropicFrames, space, upstreamEnv, user } from './helpers/inference-fixtures.ts';

/** The operator's shared keys, not shaped like provider keys, so only their exact removal hides them. */
const SHARED = { openai: 'operator-openai-Q7xZ93', anthropic: 'operator-anthropic-M4pL21' };

/** The `data:` payloads of a chat SSE body (the terminator kept as the string `[DONE]`). */
function chatEvents(text: string): any[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => (f === 'data: [DONE]' ? '[DONE]' : JSON.parse(f.replace(/^data: /, ''))));
}

describe('a provider failing after its 200', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: {
        ...upstreamEnv(up),
        COHORT_PROVIDER_OPENAI_API_KEY: SHARED.openai,
        COHORT_PROVIDER_ANTHROPIC_API_KEY: SHARED.anthropic,
      },
    });
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
      {
        id: first.id,
        object: 'chat.completion.chunk',
        created: 1,
        model: 'openai/gpt-4o',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'partial' }, finish_reason: null }],
      },
      {
        id: first.id,
        object: 'chat.completion.chunk',
        created: failed.created,
        model: 'openai/gpt-4o',
        choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
        error: { code: 502, message, metadata: { reason: 'turn_failed', retryable: true } },
      },
      '[DONE]',
    ]);

    const msgs = await s.messages({ model: 'openai/gpt-4o', stream: true, max_tokens: 10, messages: [user('hi')] });
    assert.equal(msgs.status, 200);
    const frames = anthropicFrames(msgs.body);
    assert.deepEqual(
      frames.map(([e]) => e),
      ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error'],
    );
    assert.deepEqual(frames[2]![1], {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'partial' },
    });
    assert.deepEqual(frames[4]![1], { type: 'error', error: { type: 'api_error', message } });

    const rows = await s.log();
    assert.deepEqual(
      rows.map((r) => [r.apiStyle, r.status, r.finishReason, r.error, r.responseBody]),
      ['chat', 'messages'].map((style) => [
        style,
        502,
        null,
        message,
        { role: 'assistant', content: 'partial', finish_reason: null, usage: null },
      ]),
    );
    up.misbehave('sk-malformed-mid-1', null);
  });

  test('an error the provider sends after its 200 quoting its key (BYOK or shared) reaches neither the client nor the log with the key', async () => {
    for (const provider of ['openai', 'anthropic'] as const) {
      for (const byok of [true, false]) {
        const s = await space(gw, `leak-${provider}-${byok ? 'byok' : 'shared'}`);
        await s.patch({ is_observability_io_logging_enabled: true });
        const key = byok ? `byok-${provider}-Z9Y8X7` : SHARED[provider];
        if (byok) await s.credential({ provider, key });
        up.misbehave(key, 'error-mid-stream');
        const model = `${provider}/m1`;
        const message = `provider ${provider}: quota exceeded for key [REDACTED]`;
        const from = up.received.length;

        const chat = await s.chat({ model, stream: true, messages: [user('hi')] });
        assert.equal(chat.status, 200);
        assert.ok(!chat.body.includes(key), chat.body);
        const evs = chatEvents(chat.body);
        assert.equal(
          evs
            .slice(0, -2)
            .map((e) => e.choices[0].delta.content)
            .join(''),
          'partial',
        );
        assert.deepEqual(evs.at(-2).error, {
          code: 502,
          message,
          metadata: { reason: 'turn_failed', retryable: true },
        });
        assert.equal(evs.at(-1), '[DONE]');

        const msgs = await s.messages({ model, stream: true, max_tokens: 10, messages: [user('hi')] });
        assert.equal(msgs.status, 200);
        assert.ok(!msgs.body.includes(key), msgs.body);
        const frames = anthropicFrames(msgs.body);
        assert.deepEqual(frames.at(-3)![1].delta, { type: 'text_delta', text: 'partial' });
        assert.deepEqual(frames.at(-1), ['error', { type: 'error', error: { type: 'api_error', message } }]);

        assert.deepEqual(
          up.received.slice(from).map((r) => r.key),
          [key, key],
          'the provider was called with the key it quoted',
        );
        const rows = await s.log();
        assert.ok(!JSON.stringify(rows).includes(key));
        assert.deepEqual(
          rows.map((r) => [r.apiStyle, r.status, r.error, (r.responseBody as { content: string }).content]),
          [
            ['chat', 502, message, 'partial'],
            ['messages', 502, message, 'partial'],
          ],
        );
        up.misbehave(key, null);
      }
    }
  });
});
