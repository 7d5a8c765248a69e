import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { space, upstreamEnv, user } from '../../../test/helpers/inference-fixtures.ts';
import { createKey } from '../access/identity-store.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

/** The `data:` payloads of an SSE body, parsed (the terminator kept as the string `[DONE]`). */
function events(text: string): any[] {
  assert.ok(text.endsWith('\n\n'), 'frames end with a blank line');
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      assert.match(f, /^data: /);
      const d = f.slice(6);
      return d === '[DONE]' ? d : JSON.parse(d);
    });
}
const contentOf = (evs: any[]) =>
  evs
    .filter((e) => e !== '[DONE]')
    .map((e) => e.choices[0]?.delta?.content ?? '')
    .join('');

const tools = [
  { type: 'function', function: { name: 'shell', parameters: { type: 'object' } } },
  { type: 'function', function: { name: 'ask_user', parameters: { type: 'object' } } },
  { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
];

for (const store of storeMatrix) {
  describe(`POST /chat/completions (${store.name})`, () => {
    let gw: TestGateway;
    let up: FakeUpstream;
    before(async () => {
      up = await startFakeUpstream();
      gw = await startTestGateway({
        postgres: store.postgres,
        env: { ...upstreamEnv(up), COHORT_UPSTREAM_TIMEOUT_MS: '400' },
      });
    });
    after(async () => {
      await gw.close();
      await up.close();
    });

    test('scripted model, non-streaming: /say, /think, plain lines, usage with cost', async () => {
      const s = await space(gw, 'plain');
      const res = await s.chat({
        model: 'local/scripted',
        messages: [user('/say hello world\n/think pondering\nplain line')],
      });
      assert.equal(res.status, 200);
      const { id, created, ...rest } = res.body;
      assert.match(id, /^gen-/);
      assert.equal(typeof created, 'number');
      assert.deepEqual(rest, {
        object: 'chat.completion',
        model: 'local/scripted',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'hello world\nplain line', reasoning: 'pondering' },
            finish_reason: 'stop',
          },
        ],
        system_fingerprint: null,
        usage: {
          prompt_tokens: 7,
          completion_tokens: 5,
          total_tokens: 12,
          prompt_tokens_details: { cached_tokens: 0 },
          cost: 0.000017,
          is_byok: false,
        },
      });
    });

    test('scripted model, streaming: role chunk, a word at a time, reasoning, finish with usage, [DONE]', async () => {
      const s = await space(gw, 'stream');
      const res = await s.chat({
        model: 'local/scripted',
        stream: true,
        messages: [user('/think a b\n/say one two\n/repeat 3 xy')],
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const evs = events(res.body);
      assert.equal(evs.at(-1), '[DONE]');
      assert.deepEqual(
        evs.slice(0, -1).map((e) => e.choices[0].delta),
        [
          { role: 'assistant', content: '' },
          { reasoning: 'a' },
          { reasoning: ' b' },
          { content: 'one' },
          { content: ' two' },
          { content: '\nxy' },
          { content: ' xy' },
          { content: ' xy' },
          {},
        ],
      );
      assert.equal(evs.at(-2).choices[0].finish_reason, 'stop');
      assert.deepEqual(evs.at(-2).usage, {
        prompt_tokens: 9,
        completion_tokens: 7,
        total_tokens: 16,
        prompt_tokens_details: { cached_tokens: 0 },
        cost: 0.000023,
        is_byok: false,
      });
      assert.equal(new Set(evs.slice(0, -1).map((e) => e.id)).size, 1);
    });

    test('scripted tool calls: /tool, /shell, /ask end with tool_calls; the next response resumes; steering is noted', async () => {
      const s = await space(gw, 'tools');
      const script = '/say start\n/tool lookup {"q": 1}\n/shell ls -la\n/ask Which one?\n/say done';
      const msgs: any[] = [user(script)];
      const calls: string[] = [];
      for (const expected of ['lookup', 'shell', 'ask_user']) {
        const res = await s.chat({ model: 'local/scripted', tools, messages: msgs });
        assert.equal(res.body.choices[0].finish_reason, 'tool_calls');
        const call = res.body.choices[0].message.tool_calls[0];
        assert.equal(call.function.name, expected);
        calls.push(call.function.arguments);
        msgs.push(res.body.choices[0].message, {
          role: 'tool',
          tool_call_id: call.id,
          content: `result of ${expected}`,
        });
      }
      assert.deepEqual(calls, [
        '{"q": 1}',
        '{"command":"ls -la"}',
        '{"message":"Which one?","fields":[{"name":"answer","type":"string","required":true}]}',
      ]);
      msgs.push(user('please hurry'));
      const last = await s.chat({ model: 'local/scripted', tools, stream: true, messages: msgs });
      assert.equal(contentOf(events(last.body)), 'Noted: please hurry\nask_user: result of ask_user\ndone');
      const missing = await s.chat({ model: 'local/scripted', messages: [user('/tool nope {}')] });
      assert.equal(missing.body.choices[0].message.content, 'Tool nope is not available.');
      const streamed = await s.chat({ model: 'local/scripted', tools, stream: true, messages: [user('/shell pwd')] });
      const evs = events(streamed.body);
      assert.deepEqual(evs[1].choices[0].delta.tool_calls[0].function, {
        name: 'shell',
        arguments: '{"command":"pwd"}',
      });
      assert.equal(evs.at(-2).choices[0].finish_reason, 'tool_calls');
    });

    test('/fail before any output: retryable statuses and not, in our error shape; a status no provider should send is a 502', async () => {
      const s = await space(gw, 'fail');
      const scripted = (n: number) => `provider local: scripted failure ${n}`;
      const cases: [number, number, object, string][] = [
        [503, 502, { reason: 'turn_failed', retryable: true }, scripted(503)],
        [500, 502, { reason: 'turn_failed', retryable: true }, scripted(500)],
        [429, 429, { reason: 'rate_limited', retryable: true }, scripted(429)],
        [400, 400, { reason: 'bad_request', retryable: false }, scripted(400)],
        [401, 401, { reason: 'turn_failed', retryable: false }, scripted(401)],
        [404, 404, { reason: 'turn_failed', retryable: false }, scripted(404)],
        [
          200,
          502,
          { reason: 'turn_failed', retryable: false },
          'provider local: unexpected status 200: scripted failure 200',
        ],
        [
          418,
          502,
          { reason: 'turn_failed', retryable: false },
          'provider local: unexpected status 418: scripted failure 418',
        ],
        [
          302,
          502,
          { reason: 'turn_failed', retryable: false },
          'provider local: its base URL redirects (302); redirects are not followed',
        ],
      ];
      for (const [n, status, metadata, message] of cases) {
        for (const stream of [false, true]) {
          const res = await s.chat({ model: 'local/scripted', stream, messages: [user(`/fail ${n}`)] });
          assert.equal(res.status, status, `/fail ${n}`);
          assert.deepEqual(res.body, { error: { code: status, message, metadata } });
        }
      }
    });

    test('model resolution: workspace default, presets with request overrides, unknown models', async () => {
      const s = await space(gw, 'resolve');
      const none = await s.chat({ messages: [user('hi')] });
      assert.equal(none.status, 400);
      assert.match(none.body.error.message, /^invalid request parameters: model: required/);
      await s.patch({ default_text_model: 'local/scripted' });
      const dflt = await s.chat({ messages: [user('hi')] });
      assert.equal(dflt.body.model, 'local/scripted');

      const admin = await createKey(gw.ctx.store.db, {
        orgId: gw.keys.org_id,
        creatorUserId: gw.keys.user_id,
        kind: 'management',
        workspaceId: s.ws.id,
      });
      const preset = await gw.call('POST', `/presets/brief/messages`, {
        key: admin.raw,
        body: { model: 'openai/gpt-4o', max_tokens: 77, system: 'Be brief.', messages: [user('x')] },
      });
      assert.ok([200, 201].includes(preset.status), JSON.stringify(preset.body));
      assert.equal(preset.body.data.workspace_id, s.ws.id);
      const from = up.received.length;
      await s.chat({ model: '@preset/brief', messages: [user('/say hi')] });
      const sent = up.received.slice(from)[0]!;
      assert.equal(sent.model, 'gpt-4o');
      assert.equal(sent.body.max_tokens, 77);
      assert.deepEqual((sent.body.messages as any[])[0], { role: 'system', content: 'Be brief.' });
      await s.chat({
        preset: 'brief',
        model: 'local/scripted',
        max_tokens: 5,
        messages: [{ role: 'system', content: 'Mine.' }, user('/say hi')],
      });
      assert.equal(up.received.length, from + 1, 'the request model overrides the preset model');
      const rows = await s.log();
      assert.equal(rows.at(-1)!.model, 'local/scripted');

      const saved = await gw.call('POST', `/presets/fb/chat/completions`, {
        key: admin.raw,
        body: { model: 'local/scripted', models: ['openai/gpt-4o-mini'], messages: [user('x')] },
      });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      const before = up.received.length;
      // The scripted model fails retryably, so the fallback the request named is tried instead of the preset's.
      const replaced = await s.chat({
        model: '@preset/fb',
        fallbacks: [{ model: 'openai/gpt-4o' }],
        messages: [user('/fail 503')],
      });
      assert.equal(replaced.status, 502, JSON.stringify(replaced.body));
      assert.deepEqual(
        up.received.slice(before).map((r) => r.model),
        ['gpt-4o'],
      );
    });

    test('unknown provider 400, unknown local model 404, unknown preset 404, missing endpoint 400', async () => {
      const s = await space(gw, 'unknown');
      const a = await s.chat({ model: 'nowhere/x', messages: [user('hi')] });
      assert.equal(a.status, 400);
      assert.match(a.body.error.message, /model: nowhere\/x names no known provider/);
      const b = await s.chat({ model: 'local/other', messages: [user('hi')] });
      assert.deepEqual(b.body, {
        error: {
          code: 404,
          message: 'resource not found: model local/other',
          metadata: { reason: 'not_found', retryable: false },
        },
      });
      const c = await s.chat({ model: '@preset/missing', messages: [user('hi')] });
      assert.equal(c.status, 404);
      assert.match(c.body.error.message, /^resource not found: preset missing$/);
      const d = await s.chat({ model: 'baidu/ernie', messages: [user('hi')] });
      assert.equal(d.status, 400);
      assert.match(
        d.body.error.message,
        /^invalid request parameters: model: provider baidu is not configured on this gateway/,
      );
      // With a BYOK credential it is reachable, but baidu has no public default endpoint.
      await s.credential({ provider: 'baidu', key: 'bd-key' });
      const e = await s.chat({ model: 'baidu/ernie', messages: [user('hi')] });
      assert.equal(e.status, 400);
      assert.match(e.body.error.message, /provider baidu has no endpoint configured/);
    });

    test('invalid bodies are 400 naming the field; auth is required', async () => {
      const s = await space(gw, 'invalid');
      const cases: [unknown, string][] = [
        [{ model: 'local/scripted' }, 'messages'],
        [{ model: 'local/scripted', messages: [] }, 'messages'],
        [{ model: 'local/scripted', messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
        [{ model: 'local/scripted', messages: [user('x')], stream: 'yes' }, 'stream'],
        [{ model: 'local/scripted', messages: [user('x')], temperature: 3 }, 'temperature'],
        [
          {
            model: 'local/scripted',
            messages: [user('x')],
            fallbacks: [{ model: 'a/b' }, { model: 'a/c' }, { model: 'a/d' }, { model: 'a/e' }],
          },
          'fallbacks',
        ],
        [
          { model: 'local/scripted', messages: [user('x')], fallbacks: [{ model: 'a/b' }], models: ['a/c'] },
          'fallbacks',
        ],
        [{ model: '', messages: [user('x')] }, 'model'],
        [{ model: '@preset/', messages: [user('x')] }, 'model: @preset/ needs a preset slug after it$'],
      ];
      for (const [body, field] of cases) {
        const res = await s.chat(body as Record<string, unknown>);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(
          res.body.error.message,
          new RegExp(`^invalid request parameters: .*${field.replace('.', '\\.')}`),
          JSON.stringify(res.body),
        );
      }
      const noKey = await gw.call('POST', '/chat/completions', {
        key: null,
        body: { model: 'local/scripted', messages: [user('x')] },
      });
      assert.equal(noKey.status, 401);
    });

    test('a disabled server tool is refused with 403 before anything is sent upstream', async () => {
      const s = await space(gw, 'tools-off', { disabled_server_tools: ['service:web_search'] });
      const from = up.received.length;
      const a = await s.chat({
        model: 'openai/gpt-4o',
        tools: [{ type: 'service:web_search' }],
        messages: [user('x')],
      });
      assert.equal(a.status, 403);
      assert.equal(a.body.error.message, 'server tool service:web_search is disabled in this workspace');
      const b = await s.chat({ model: 'openai/gpt-4o', plugins: [{ id: 'web' }], messages: [user('x')] });
      assert.equal(b.status, 403);
      assert.equal(up.received.length, from);
      // An allowed one runs: offered to the model as a function tool (tools/loop.test.ts has the loop).
      const ok = await s.chat({
        model: 'openai/gpt-4o',
        tools: [{ type: 'service:datetime' }],
        messages: [user('/say fine')],
      });
      assert.equal(ok.status, 200);
      assert.deepEqual(
        (up.received.at(-1)!.body.tools as { type: string; function: { name: string } }[]).map((t) => [
          t.type,
          t.function.name,
        ]),
        [['function', 'datetime']],
      );
    });

    test('a client that disconnects aborts the upstream request', async () => {
      const s = await space(gw, 'abort');
      const from = up.received.length;
      const ctl = new AbortController();
      const res = await fetch(`${gw.url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'openai/gpt-4o',
          stream: true,
          messages: [user('/say first\n/sleep 100\n/sleep 100\n/sleep 100\n/sleep 100\n/sleep 100\n/say never')],
        }),
        signal: ctl.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      ctl.abort();
      await waitFor('the upstream request is aborted', () => up.received[from]?.aborted);
      assert.equal(up.received[from]!.aborted, true);
      await waitFor('the request is logged', async () => (await s.log()).length);
      assert.equal((await s.log())[0]!.status, 499);
    });

    test('a client that disconnects before the answer aborts the upstream request, and no other credential is tried', async () => {
      const s = await space(gw, 'abort-early');
      await s.credential({ key: 'sk-abort-early-byok' });
      const from = up.received.length;
      const ctl = new AbortController();
      const pending = fetch(`${gw.url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o', messages: [user('/sleep 300\n/say never')] }),
        signal: ctl.signal,
      }).catch((e: Error) => e.name);
      await waitFor('the upstream has the request', () => up.received[from]);
      ctl.abort();
      assert.equal(await pending, 'AbortError');
      await waitFor('the upstream request is aborted', () => up.received[from]!.aborted);
      assert.equal(up.received[from]!.aborted, true);
      await waitFor('the request is logged', async () => (await s.log()).length);
      const [row] = await s.log();
      assert.deepEqual([row!.status, row!.attempts, row!.error], [499, 1, 'the client closed the request']);
      assert.deepEqual(
        up.received.slice(from).map((r) => r.key),
        ['sk-abort-early-byok'],
      );
    });

    test('an upstream that stalls times out (504), or after the stream opened ends it with an error chunk', async () => {
      const s = await space(gw, 'timeout');
      const stalled = await s.chat({ model: 'openai/gpt-4o', messages: [user('/sleep 1500\n/say late')] });
      assert.equal(stalled.status, 504);
      assert.deepEqual(stalled.body.error.metadata, { reason: 'timeout', retryable: true });
      const mid = await s.chat({
        model: 'openai/gpt-4o',
        stream: true,
        messages: [user('/say early\n/sleep 1500\n/say late')],
      });
      assert.equal(mid.status, 200);
      const evs = events(mid.body);
      assert.equal(evs.at(-1), '[DONE]');
      assert.equal(evs.at(-2).choices[0].finish_reason, 'error');
      assert.deepEqual(evs.at(-2).error, {
        code: 504,
        message: 'provider openai: the provider did not answer in time',
        metadata: { reason: 'timeout', retryable: true },
      });
    });

    test('a provider that sends no usage: the stream still ends with usage (zeros, cost, is_byok), as the completion has, and the log records it', async () => {
      const s = await space(gw, 'no-usage');
      await s.patch({ is_observability_io_logging_enabled: true });
      await s.credential({ key: 'sk-no-usage-key-1' });
      up.misbehave('sk-no-usage-key-1', 'no-usage');
      const usage = {
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        prompt_tokens_details: { cached_tokens: 0 },
        cost: 0,
        is_byok: true,
      };
      const plain = await s.chat({ model: 'openai/gpt-4o', messages: [user('/say hi')] });
      assert.deepEqual(plain.body.usage, usage);
      const res = await s.chat({ model: 'openai/gpt-4o', stream: true, messages: [user('/say hi')] });
      const evs = events(res.body);
      assert.deepEqual(
        evs.map((e) =>
          e === '[DONE]' ? e : [e.choices[0]?.delta ?? null, e.choices[0]?.finish_reason ?? null, e.usage ?? null],
        ),
        [
          [{ role: 'assistant', content: '' }, null, null],
          [{ content: 'hi' }, null, null],
          [{}, 'stop', null],
          [null, null, usage],
          '[DONE]',
        ],
      );
      assert.deepEqual(evs.at(-2), {
        id: evs[0].id,
        object: 'chat.completion.chunk',
        created: evs.at(-2).created,
        model: 'openai/gpt-4o',
        choices: [],
        usage,
      });
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => [
          r.streamed,
          r.status,
          r.finishReason,
          r.promptTokens,
          r.completionTokens,
          r.totalTokens,
          r.cachedTokens,
          r.cost,
        ]),
        [
          [false, 200, 'stop', 0, 0, 0, 0, 0],
          [true, 200, 'stop', 0, 0, 0, 0, 0],
        ],
      );
      assert.deepEqual(rows[1]!.responseBody, { role: 'assistant', content: 'hi', finish_reason: 'stop', usage });
      up.misbehave('sk-no-usage-key-1', null);
    });

    test('I/O logging: off, on, filtered by key, sampled', async () => {
      const s = await space(gw, 'io');
      const body = { model: 'local/scripted', messages: [user('/say logged')] };
      await s.chat(body);
      await s.patch({ is_observability_io_logging_enabled: true });
      await s.chat(body);
      await s.chat({ ...body, stream: true });
      await s.patch({ io_logging_api_key_ids: ['00000000-0000-4000-8000-000000000000'] });
      await s.chat(body);
      await s.patch({ io_logging_api_key_ids: [s.keyRow.id], io_logging_sampling_rate: 0.0001 });
      for (let i = 0; i < 5; i++) await s.chat(body);
      const rows = await s.log();
      assert.equal(rows.length, 9);
      assert.deepEqual(
        rows.map((r) => r.requestBody !== null),
        [false, true, true, false, false, false, false, false, false],
      );
      assert.deepEqual(rows[1]!.requestBody, body);
      assert.equal((rows[1]!.responseBody as any).choices[0].message.content, 'logged');
      assert.deepEqual(rows[2]!.responseBody, {
        role: 'assistant',
        content: 'logged',
        finish_reason: 'stop',
        usage: {
          prompt_tokens: 2,
          completion_tokens: 1,
          total_tokens: 3,
          prompt_tokens_details: { cached_tokens: 0 },
          cost: 0.000004,
          is_byok: false,
        },
      });
      assert.deepEqual(
        { ...rows[0], id: undefined, createdAt: undefined, latencyMs: undefined },
        {
          id: undefined,
          createdAt: undefined,
          latencyMs: undefined,
          orgId: gw.keys.org_id,
          workspaceId: s.ws.id,
          apiKeyId: s.keyRow.id,
          chargedKeyId: s.keyRow.id,
          guardrailId: null,
          userId: gw.keys.user_id,
          apiStyle: 'chat',
          requestedModel: 'local/scripted',
          model: 'local/scripted',
          provider: 'local',
          credentialId: null,
          isByok: false,
          streamed: false,
          attempts: 1,
          status: 200,
          finishReason: 'stop',
          error: null,
          promptTokens: 2,
          completionTokens: 1,
          totalTokens: 3,
          cachedTokens: 0,
          cost: 0.000004,
          requestBody: null,
          responseBody: null,
          generationId: null,
          routing: 'sort=default',
          sessionId: null,
          externalUser: null,
          metadata: null,
          step: null,
        },
      );
    });

    test('the openai client works unchanged, streaming and not', async () => {
      const s = await space(gw, 'sdk');
      const client = new OpenAI({ apiKey: s.key, baseURL: gw.url, maxRetries: 0 });
      const c = await client.chat.completions.create({
        model: 'local/scripted',
        messages: [{ role: 'user', content: '/say from the sdk' }],
      });
      assert.equal(c.choices[0]!.message.content, 'from the sdk');
      assert.equal(c.usage?.total_tokens, 7);
      const stream = await client.chat.completions.create({
        model: 'local/scripted',
        stream: true,
        tools: tools as OpenAI.ChatCompletionTool[],
        messages: [{ role: 'user', content: '/say x\n/shell ls' }],
      });
      const parts: string[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        parts.push(chunk.choices[0]?.delta.content ?? '');
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(parts.join(''), 'x');
      assert.equal(finish, 'tool_calls');
      await assert.rejects(
        client.chat.completions.create({ model: 'local/scripted', messages: [{ role: 'user', content: '/fail 400' }] }),
        (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400,
      );
    });
  });
}

test('a model stream that goes quiet carries `: keepalive` comments and then goes on to [DONE]', async () => {
  const gw = await startTestGateway({ env: { COHORT_KEEPALIVE_MS: '50' } });
  try {
    const s = await space(gw, 'quiet');
    const res = await s.chat({
      model: 'local/scripted',
      stream: true,
      messages: [user('/say before\n/sleep 300\n/say after')],
    });
    assert.equal(res.status, 200);
    const text = res.body as string;
    const before = text.indexOf('"content":"before"');
    const keepalive = text.indexOf('\n\n: keepalive\n\n');
    const after = text.indexOf('after"');
    assert.ok(before !== -1 && before < keepalive && keepalive < after, text);
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    assert.deepEqual(
      events(text.replaceAll(': keepalive\n\n', ''))
        .slice(0, -1)
        .map((e) => e.choices[0].delta.content ?? null),
      ['', 'before', '\nafter', null],
    );
  } finally {
    await gw.close();
  }
});
