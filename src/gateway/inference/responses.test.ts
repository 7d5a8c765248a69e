import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { responseFrames, space, upstreamEnv, type Space } from '../../../test/helpers/inference-fixtures.ts';
import { createKey } from '../access/identity-store.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const tools = [
  { type: 'function' as const, name: 'shell', parameters: { type: 'object' }, strict: false },
  { type: 'function' as const, name: 'lookup', parameters: { type: 'object' }, strict: false },
];
const usageOf = (input: number, output: number, cost: number, isByok = false) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: input + output,
  cost,
  is_byok: isByok,
});
const text = (t: string) => [{ type: 'output_text', text: t, annotations: [], logprobs: [] }];

describe('POST /responses', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  let s: Space;
  let client: OpenAI;
  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({ env: { ...upstreamEnv(up), COHORT_UPSTREAM_TIMEOUT_MS: '400' } });
    s = await space(gw, 'responses');
    client = new OpenAI({ apiKey: s.key, baseURL: gw.url, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('non-streaming through the openai client: reasoning and text items, output_text, usage with cost', async () => {
    const r = await client.responses.create({
      model: 'local/scripted',
      instructions: 'Be brief.',
      input: '/think hmm\n/say hello world',
    });
    const base = r.id.slice('resp_'.length);
    assert.match(r.id, /^resp_gen-[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...r, created_at: 0, completed_at: 0 },
      {
        id: r.id,
        object: 'response',
        created_at: 0,
        status: 'completed',
        completed_at: 0,
        error: null,
        incomplete_details: null,
        instructions: 'Be brief.',
        max_output_tokens: null,
        model: 'local/scripted',
        output: [
          { id: `rs_${base}_0`, type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'hmm' }] },
          {
            id: `msg_${base}_1`,
            type: 'message',
            status: 'completed',
            role: 'assistant',
            content: text('hello world'),
          },
        ],
        output_text: 'hello world',
        parallel_tool_calls: true,
        previous_response_id: null,
        reasoning: null,
        store: false,
        temperature: null,
        text: { format: { type: 'text' } },
        tool_choice: 'auto',
        tools: [],
        top_p: null,
        truncation: 'disabled',
        usage: usageOf(7, 3, 0.000013),
        metadata: {},
      },
    );
    const rows = await s.log();
    assert.deepEqual(
      { ...rows.at(-1)!, createdAt: undefined, latencyMs: undefined },
      {
        id: base,
        orgId: gw.keys.org_id,
        workspaceId: s.ws.id,
        apiKeyId: s.keyRow.id,
        chargedKeyId: s.keyRow.id,
        guardrailId: null,
        userId: gw.keys.user_id,
        apiStyle: 'responses',
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
        promptTokens: 7,
        completionTokens: 3,
        totalTokens: 10,
        cachedTokens: 0,
        cost: 0.000013,
        requestBody: null,
        responseBody: null,
        generationId: null,
        step: null,
        routing: 'sort=default',
        sessionId: null,
        externalUser: null,
        metadata: null,
        createdAt: undefined,
        latencyMs: undefined,
      },
    );
  });

  test('streaming: the exact event sequence, text deltas a word at a time, response.completed with usage; the client assembles it', async () => {
    const res = await s.responses({ model: 'local/scripted', stream: true, input: '/think a b\n/say one two' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const evs = responseFrames(res.body);
    assert.deepEqual(
      evs.map(([t, d]) => [t, d.delta ?? d.text ?? d.item?.type ?? d.part?.type ?? d.response?.status]),
      [
        ['response.created', 'in_progress'],
        ['response.in_progress', 'in_progress'],
        ['response.output_item.added', 'reasoning'],
        ['response.content_part.added', 'reasoning_text'],
        ['response.reasoning_text.delta', 'a'],
        ['response.reasoning_text.delta', ' b'],
        ['response.reasoning_text.done', 'a b'],
        ['response.content_part.done', 'reasoning_text'],
        ['response.output_item.done', 'reasoning'],
        ['response.output_item.added', 'message'],
        ['response.content_part.added', 'output_text'],
        ['response.output_text.delta', 'one'],
        ['response.output_text.delta', ' two'],
        ['response.output_text.done', 'one two'],
        ['response.content_part.done', 'output_text'],
        ['response.output_item.done', 'message'],
        ['response.completed', 'completed'],
      ],
    );
    const final = evs.at(-1)![1].response;
    assert.equal(final.id, evs[0]![1].response.id);
    assert.deepEqual([final.output_text, final.usage], ['one two', usageOf(6, 4, 0.000014)]);
    assert.ok(res.body.endsWith('"sequence_number":16}\n\n'), 'no [DONE] after response.completed');

    const stream = client.responses.stream({ model: 'local/scripted', input: '/say streamed by the sdk' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const r = await stream.finalResponse();
    assert.deepEqual(
      [deltas.join(''), r.output_text, r.status, r.usage?.total_tokens],
      ['streamed by the sdk', 'streamed by the sdk', 'completed', 9],
    );
    const streamedRows = (await s.log()).filter((x) => x.streamed);
    assert.deepEqual(
      streamedRows.map((x) => [x.apiStyle, x.status, x.finishReason, x.totalTokens]),
      [
        ['responses', 200, 'stop', 10],
        ['responses', 200, 'stop', 9],
      ],
    );
  });

  test('a function call as a function_call item; function_call_output continues the script, streamed or not', async () => {
    const script = '/say looking\n/shell pwd\n/say after';
    const first = await client.responses.create({ model: 'local/scripted', tools, input: script });
    const call = first.output.at(-1)!;
    assert.equal(call.type, 'function_call');
    assert.deepEqual(
      first.output.map((i) => i.type),
      ['message', 'function_call'],
    );
    if (call.type !== 'function_call') return;
    assert.match(call.call_id, /^call_[0-9a-f]{24}$/);
    assert.deepEqual(
      [call.name, call.arguments, call.status, first.status, first.output_text],
      ['shell', '{"command":"pwd"}', 'completed', 'completed', 'looking'],
    );

    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: script },
      ...(first.output as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: call.call_id, output: '/home' },
    ];
    const next = await client.responses.create({ model: 'local/scripted', tools, input });
    assert.deepEqual([next.output_text, next.output.length, next.usage?.output_tokens], ['shell: /home\nafter', 1, 3]);

    const streamed = await s.responses({
      model: 'local/scripted',
      stream: true,
      tools,
      input: '/tool lookup {"q": 1}',
    });
    const evs = responseFrames(streamed.body);
    assert.deepEqual(
      evs.slice(2).map(([t]) => t),
      [
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    const item = evs[5]![1].item;
    assert.deepEqual(evs[2]![1].item, { ...item, status: 'in_progress', arguments: '' });
    assert.deepEqual(evs[4]![1], {
      type: 'response.function_call_arguments.done',
      item_id: item.id,
      output_index: 0,
      name: 'lookup',
      arguments: '{"q": 1}',
      sequence_number: 4,
    });
    assert.deepEqual(
      [item.type, item.name, item.arguments, item.status],
      ['function_call', 'lookup', '{"q": 1}', 'completed'],
    );
    const resumed = await s.responses({
      model: 'local/scripted',
      stream: true,
      tools,
      input: [
        { role: 'user', content: '/tool lookup {"q": 1}\n/say found' },
        item,
        { type: 'function_call_output', call_id: item.call_id, output: [{ type: 'input_text', text: '42' }] },
      ],
    });
    const deltas = responseFrames(resumed.body).filter(([t]) => t === 'response.output_text.delta');
    assert.equal(deltas.map(([, d]) => d.delta).join(''), 'lookup: 42\nfound');
  });

  test('a preset saved from a responses body: its model, instructions and output cap reach the provider as chat completions', async () => {
    const t = await space(gw, 'responses-preset');
    const admin = await createKey(gw.ctx.store.db, {
      orgId: gw.keys.org_id,
      creatorUserId: gw.keys.user_id,
      kind: 'management',
      workspaceId: t.ws.id,
    });
    const saved = await gw.call('POST', '/presets/terse/responses', {
      key: admin.raw,
      body: { model: 'openai/gpt-4o', instructions: 'Be terse.', max_output_tokens: 42, input: 'x' },
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const from = up.received.length;
    const res = await t.responses({ model: '@preset/terse', input: '/say ok' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.model, res.body.output_text, res.body.usage.is_byok], ['openai/gpt-4o', 'ok', false]);
    const sent = up.received[from]!;
    assert.deepEqual([sent.path, sent.key], ['/v1/chat/completions', 'sk-shared-openai-0123456789']);
    assert.deepEqual(sent.body, {
      model: 'gpt-4o',
      max_tokens: 42,
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: '/say ok' },
      ],
      stream: false,
    });
    const [row] = await t.log();
    assert.deepEqual(
      [row!.apiStyle, row!.requestedModel, row!.model, row!.provider],
      ['responses', '@preset/terse', 'openai/gpt-4o', 'openai'],
    );
  });

  test("a BYOK credential: the fake upstream gets the credential's key and the translated request; usage and the log say BYOK", async () => {
    const t = await space(gw, 'responses-byok');
    const cred = await t.credential({ key: 'sk-responses-byok-0001' });
    const from = up.received.length;
    const body = {
      model: 'openai/gpt-4o',
      stream: true,
      tools: [tools[0]],
      tool_choice: 'auto',
      temperature: 0.5,
      store: false,
      include: ['reasoning.encrypted_content'],
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: '/shell ls\n/say listed' }] },
        { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"command":"ls"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
      ],
    };
    const res = await t.responses(body);
    assert.equal(res.status, 200);
    const sent = up.received[from]!;
    assert.deepEqual([sent.path, sent.key], ['/v1/chat/completions', 'sk-responses-byok-0001']);
    assert.deepEqual(sent.body, {
      model: 'gpt-4o',
      tool_choice: 'auto',
      temperature: 0.5,
      messages: [
        { role: 'user', content: '/shell ls\n/say listed' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
      ],
      tools: [{ type: 'function', function: { name: 'shell', parameters: { type: 'object' }, strict: false } }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const final = responseFrames(res.body).at(-1)![1].response;
    assert.deepEqual(
      [final.model, final.output_text, final.usage.is_byok],
      ['openai/gpt-4o', 'shell: a.txt\nlisted', true],
    );
    const [row] = await t.log();
    assert.deepEqual(
      [row!.apiStyle, row!.credentialId, row!.isByok, row!.streamed, row!.status],
      ['responses', cred.id, true, true, 200],
    );
  });

  test('invalid bodies are 400 naming the field, in the chat error shape, and write nothing', async () => {
    const t = await space(gw, 'responses-invalid');
    const cases: [unknown, string][] = [
      [{ model: 'local/scripted' }, 'input: required: a string or an array of input items'],
      [{ model: 'local/scripted', input: [] }, 'input: Too small: expected array to have >=1 items'],
      [
        { model: 'local/scripted', input: [{ role: 'robot', content: 'x' }] },
        'input.0.role: Invalid option: expected one of "user"|"assistant"|"system"|"developer"',
      ],
      [
        { model: 'local/scripted', input: [{ type: 'item_reference', id: 'x' }] },
        "input.0.type: Invalid discriminator value. Expected 'message' | 'undefined' | 'function_call' | 'function_call_output' | 'reasoning'",
      ],
      [
        { model: 'local/scripted', input: [{ type: 'function_call_output', output: 'x' }] },
        'input.0.call_id: Invalid input: expected string, received undefined',
      ],
      [
        { model: 'local/scripted', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] },
        'input.0.content.0.image_url: Invalid input: expected string, received undefined',
      ],
      [
        { model: 'local/scripted', input: 'x', tools: [{ type: 'function' }] },
        'tools.0.name: required for a function tool',
      ],
      [
        { model: 'local/scripted', input: 'x', previous_response_id: 'resp_1' },
        'previous_response_id: not supported: this gateway stores no responses, so send the whole conversation as input',
      ],
      [{ model: 'local/scripted', input: 'x', temperature: 3 }, 'temperature: Too big: expected number to be <=2'],
      [
        { model: 'local/scripted', input: 'x', stream: 'yes' },
        'stream: Invalid input: expected boolean, received string',
      ],
      [{ model: '@preset/', input: 'x' }, 'model: @preset/ needs a preset slug after it'],
    ];
    for (const [body, message] of cases) {
      const res = await t.responses(body as Record<string, unknown>);
      assert.deepEqual(
        [res.status, res.body],
        [
          400,
          {
            error: {
              code: 400,
              message: `invalid request parameters: ${message}`,
              metadata: { reason: 'bad_request', retryable: false },
            },
          },
        ],
        JSON.stringify(body),
      );
    }
    assert.deepEqual(
      (await t.log()).map((r) => [r.apiStyle, r.status]),
      [['responses', 400]],
      'only the refusal after validation (the preset) is logged',
    );
    const noKey = await gw.call('POST', '/responses', { key: null, body: { model: 'local/scripted', input: 'x' } });
    assert.deepEqual(
      [noKey.status, noKey.body],
      [401, { error: { code: 401, message: 'missing authentication header' } }],
    );
    await assert.rejects(
      client.responses.create({ model: 'local/scripted', input: [] }),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400,
    );
  });

  test('failures: before output our error body (status, reason, Retry-After); after it, response.failed', async () => {
    const t = await space(gw, 'responses-fail');
    const failed = await t.responses({ model: 'local/scripted', stream: true, input: '/fail 503' });
    assert.deepEqual(
      [failed.status, failed.body],
      [
        502,
        {
          error: {
            code: 502,
            message: 'provider local: scripted failure 503',
            metadata: { reason: 'turn_failed', retryable: true },
          },
        },
      ],
    );
    const limited = await t.responses({ model: 'local/scripted', input: '/fail 429' });
    assert.deepEqual(
      [limited.status, limited.headers.get('retry-after'), limited.body.error.metadata],
      [429, '1', { reason: 'rate_limited', retryable: true }],
    );
    const mid = await t.responses({
      model: 'openai/gpt-4o',
      stream: true,
      input: '/say early\n/sleep 1500\n/say late',
    });
    assert.equal(mid.status, 200);
    const evs = responseFrames(mid.body);
    assert.deepEqual(evs.map(([type]) => type).slice(-3), [
      'response.content_part.added',
      'response.output_text.delta',
      'response.failed',
    ]);
    const response = evs.at(-1)![1].response;
    assert.deepEqual(
      [response.status, response.error],
      [
        'failed',
        {
          code: 'server_error',
          message: 'provider openai: the provider did not answer in time',
          metadata: { reason: 'timeout', retryable: true },
        },
      ],
    );
    assert.deepEqual(
      response.output.map((i: any) => [i.type, i.status, i.content[0].text]),
      [['message', 'incomplete', 'early']],
    );
    const rows = await t.log();
    assert.deepEqual(
      rows.map((r) => [r.streamed, r.status]),
      [
        [true, 502],
        [false, 429],
        [true, 504],
      ],
    );
  });

  test('a client that disconnects mid-stream aborts the upstream request; the log says 499', async () => {
    const t = await space(gw, 'responses-abort');
    const from = up.received.length;
    const ctl = new AbortController();
    const res = await fetch(`${gw.url}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'openai/gpt-4o',
        stream: true,
        input: '/say first\n/sleep 100\n/sleep 100\n/sleep 100\n/sleep 100\n/say never',
      }),
      signal: ctl.signal,
    });
    assert.equal(res.status, 200);
    await res.body!.getReader().read();
    ctl.abort();
    await waitFor('the upstream request is aborted', () => up.received[from]?.aborted === true);
    assert.equal(up.received[from]!.aborted, true);
    await waitFor('the request is logged', async () => (await t.log()).length > 0);
    const [row] = await t.log();
    assert.deepEqual(
      [row!.apiStyle, row!.status, row!.error, row!.streamed],
      ['responses', 499, 'the client closed the request', true],
    );
  });

  test('the OpenAPI document lists POST /responses with its request schema and refusals', async () => {
    const doc = (await gw.call('GET', '/openapi.json', { key: null })).body;
    const op = doc.paths['/responses'].post;
    assert.deepEqual(op.tags, ['inference']);
    assert.deepEqual(Object.keys(op.responses), ['200', '400', '401', '402', '403', '404', '429', '502', '504']);
    const schema = op.requestBody.content['application/json'].schema;
    assert.deepEqual(schema.required, ['input']);
    for (const field of ['input', 'instructions', 'tools', 'max_output_tokens', 'model', 'stream'])
      assert.ok(schema.properties[field], field);
  });
});

test('POST /responses holds a model-request slot: over the per-key limit it is 429 with Retry-After, as the chat route', async () => {
  const gw = await startTestGateway({ env: { COHORT_MAX_MODEL_REQUESTS_PER_KEY: '1' } });
  try {
    const s = await space(gw, 'responses-slots');
    const ctl = new AbortController();
    const held = await fetch(`${gw.url}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'local/scripted', stream: true, input: '/say held\n/sleep 5000' }),
      signal: ctl.signal,
    });
    assert.equal(held.status, 200);
    const over = await s.responses({ model: 'local/scripted', input: 'hi' });
    assert.deepEqual(
      [over.status, over.headers.get('retry-after'), over.body],
      [
        429,
        '1',
        {
          error: {
            code: 429,
            message: 'too many concurrent model requests for this API key (at most 1); retry when one ends',
            metadata: { reason: 'rate_limited', retryable: true },
          },
        },
      ],
    );
    assert.equal(over.body.error.code, 429);
    ctl.abort();
    await waitFor('every slot is released', () => gw.ctx.slots.held === 0);
    const after = await s.responses({ model: 'local/scripted', input: '/say free' });
    assert.deepEqual([after.status, after.body.output_text], [200, 'free']);
  } finally {
    await gw.close();
  }
});
