// An intern whose model provider fails after its stream opened, end to end: fake upstream on
// loopback → the gateway's model route → the built-in agent in a real daemon → the chat stream.
// The turn fails in the stream (it does not complete on the partial text), and the provider's
// key it quoted reaches neither the caller nor the daemon's event.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { SHARED_OPENAI_KEY, upstreamEnv } from './helpers/inference-fixtures.ts';
import { assertChatStream, startInternFixture, type InternFixture } from './helpers/interns.ts';

describe('an intern whose provider fails mid-stream', () => {
  let up: FakeUpstream;
  let f: InternFixture;
  before(async () => {
    up = await startFakeUpstream();
    f = await startInternFixture({ env: upstreamEnv(up) });
  });
  after(async () => {
    await f.close();
    await up.close();
  });

  test('the text before the failure streams, then a turn_failed error chunk, the final chunk and [DONE]', async () => {
    const id = await f.intern('upstream-fails', { model: 'openai/gpt-4o' });
    const ok = await f.chat(id, { stream: true, messages: [{ role: 'user', content: '/say fine' }] });
    assertChatStream(ok);
    assert.equal(ok.chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'fine');

    up.misbehave(SHARED_OPENAI_KEY, 'error-mid-stream');
    const r = await f.chat(id, { stream: true, messages: [{ role: 'user', content: '/say never' }] });
    assertChatStream(r);
    assert.ok(!r.text.includes(SHARED_OPENAI_KEY), r.text);
    assert.equal(r.chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'partial');
    const failed = r.chunks.find((c) => c.choices[0]?.finish_reason === 'error');
    assert.deepEqual(failed.error, {
      code: 502,
      message: 'model stream failed (502): provider openai: quota exceeded for key [REDACTED]',
      metadata: { reason: 'turn_failed', retryable: true },
    });
    assert.deepEqual(r.chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['error']);
    assert.equal(r.chunks.at(-1).choices.length, 0);
    up.misbehave(SHARED_OPENAI_KEY, null);
  });
});
