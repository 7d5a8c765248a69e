// A provider's stream chunks reach the client with our id and model: a chunk in the usual layout
// keeps the provider's own text for the rest (its extra fields and escapes as sent), any other
// layout is serialised again, and a chunk whose usage gains a cost is always serialised again.
// A delta nobody reads the content of passes unparsed: a finish written with spaces and a chunk
// with no choices are still parsed (and checked); a delta cut short inside its JSON is not.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../../../../test/helpers/gateway.ts';
import { space, user } from '../../../../../test/helpers/inference-fixtures.ts';

const USUAL =
  '{"id":"up-1","object":"chat.completion.chunk","created":7,"model":"gpt-x","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"caf\\u00e9"},"logprobs":null,"finish_reason":null}]}';
const REORDERED =
  '{"choices":[{"index":0,"delta":{"content":" ok"},"finish_reason":null}], "id":"up-1","object":"chat.completion.chunk","created":7,"model":"gpt-x"}';
const LAST =
  '{"id":"up-1","object":"chat.completion.chunk","created":8,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}';

const DELTA =
  '{"id":"up-1","object":"chat.completion.chunk","created":7,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"a \\"usage\\": {}"},"finish_reason":null}]}';
const SPACED_LAST =
  '{"id":"up-1","object":"chat.completion.chunk","created":8,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason" : "length"}]}';
const NO_CHOICES = '{"id":"up-1","object":"chat.completion.chunk","created":7,"model":"gpt-x","delta":{}}';
const CUT =
  '{"id":"up-1","object":"chat.completion.chunk","created":7,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"x"}';
/** The upstream's stream for each model the test asks for. */
const STREAMS: Record<string, string[]> = {
  'gpt-x': [USUAL, REORDERED, LAST, '[DONE]'],
  'gpt-spaced': [DELTA, SPACED_LAST, '[DONE]'],
  'gpt-nochoices': [DELTA, NO_CHOICES, LAST, '[DONE]'],
  'gpt-cut': [DELTA, CUT, LAST, '[DONE]'],
};

describe('OpenAI-compatible stream chunks on the wire', () => {
  let upstream: Server;
  let gw: TestGateway;
  before(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req
        .on('data', (d: Buffer) => (body += d))
        .on('end', () => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end((STREAMS[/"model":"([^"]*)"/.exec(body)?.[1] ?? ''] ?? []).map((d) => `data: ${d}\n\n`).join(''));
        });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      env: { COHORT_PROVIDER_OPENAI_BASE_URL: url, COHORT_PROVIDER_OPENAI_API_KEY: 'sk-wire-test' },
    });
  });
  after(async () => {
    await gw.close();
    await new Promise((r) => upstream.close(r));
  });

  test('usual layout spliced as sent, others serialised, usage with cost serialised', async () => {
    const s = await space(gw, 'wire');
    const res = await s.chat({ model: 'openai/gpt-x', stream: true, messages: [user('hi')] });
    assert.equal(res.status, 200);
    const frames = (res.body as string).split('\n\n');
    assert.deepEqual(frames.slice(-2), ['data: [DONE]', '']);
    assert.equal(frames.length, 5);
    const id = JSON.parse(frames[0]!.slice(6)).id as string;
    assert.match(id, /^gen-/);
    assert.equal(
      frames[0],
      `data: {"id":"${id}","object":"chat.completion.chunk","created":7,"model":"openai/gpt-x","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"caf\\u00e9"},"logprobs":null,"finish_reason":null}]}`,
    );
    assert.equal(
      frames[1],
      `data: {"choices":[{"index":0,"delta":{"content":" ok"},"finish_reason":null}],"id":"${id}","object":"chat.completion.chunk","created":7,"model":"openai/gpt-x"}`,
    );
    const last = JSON.parse(frames[2]!.slice(6));
    assert.equal(last.id, id);
    assert.equal(last.model, 'openai/gpt-x');
    assert.equal(last.choices[0].finish_reason, 'stop');
    assert.equal(last.usage.total_tokens, 5);
    assert.equal(typeof last.usage.cost, 'number');
    assert.equal(last.usage.is_byok, false);
  });

  test('a delta whose content spells a key passes as sent; a finish written with spaces is still read', async () => {
    const s = await space(gw, 'wire-spaced');
    const res = await s.chat({ model: 'openai/gpt-spaced', stream: true, messages: [user('hi')] });
    const frames = (res.body as string).split('\n\n');
    const id = JSON.parse(frames[0]!.slice(6)).id as string;
    assert.equal(
      frames[0],
      `data: {"id":"${id}","object":"chat.completion.chunk","created":7,"model":"openai/gpt-spaced","choices":[{"index":0,"delta":{"content":"a \\"usage\\": {}"},"finish_reason":null}]}`,
    );
    assert.equal(
      frames[1],
      `data: {"id":"${id}","object":"chat.completion.chunk","created":8,"model":"openai/gpt-spaced","choices":[{"index":0,"delta":{},"finish_reason" : "length"}]}`,
    );
    // The finish was seen: no error chunk for a stream that "never finished"; the provider sent no
    // usage, so the stream ends with ours, as a completion would have it.
    assert.deepEqual(JSON.parse(frames[2]!.slice(6)), {
      id,
      object: 'chat.completion.chunk',
      created: JSON.parse(frames[2]!.slice(6)).created,
      model: 'openai/gpt-spaced',
      choices: [],
      usage: {
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        prompt_tokens_details: { cached_tokens: 0 },
        cost: 0,
        is_byok: false,
      },
    });
    assert.deepEqual(frames.slice(3), ['data: [DONE]', '']);
  });

  test('a chunk in the usual layout with no choices fails its read with the 502 error chunk', async () => {
    const s = await space(gw, 'wire-nochoices');
    const res = await s.chat({ model: 'openai/gpt-nochoices', stream: true, messages: [user('hi')] });
    assert.equal(res.status, 200);
    const frames = (res.body as string).split('\n\n');
    assert.equal(frames.length, 4); // the delta that came in the same read as the bad chunk goes out before the error
    assert.deepEqual(JSON.parse(frames[0]!.slice(6)).choices[0].delta, { content: 'a "usage": {}' });
    const err = JSON.parse(frames[1]!.slice(6));
    assert.deepEqual(
      [err.choices, err.error.code, err.error.metadata.retryable],
      [[{ index: 0, delta: {}, finish_reason: 'error' }], 502, true],
    );
    assert.match(err.error.message, /the provider sent a malformed stream event$/);
    assert.deepEqual(frames.slice(2), ['data: [DONE]', '']);
  });

  test('a delta cut short inside its JSON is passed as the provider sent it, as a pass-through proxy would', async () => {
    const s = await space(gw, 'wire-cut');
    const res = await s.chat({ model: 'openai/gpt-cut', stream: true, messages: [user('hi')] });
    const frames = (res.body as string).split('\n\n');
    const id = JSON.parse(frames[0]!.slice(6)).id as string;
    assert.equal(
      frames[1],
      `data: {"id":"${id}","object":"chat.completion.chunk","created":7,"model":"openai/gpt-cut","choices":[{"index":0,"delta":{"content":"x"}`,
    );
    assert.equal(JSON.parse(frames[2]!.slice(6)).choices[0].finish_reason, 'stop');
    assert.deepEqual(frames.slice(3), ['data: [DONE]', '']);
  });
});
