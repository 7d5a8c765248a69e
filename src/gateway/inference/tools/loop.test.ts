// The server-tool loop through the three model routes, streamed and not, driven by the scripted
// model (its `/tool NAME JSON` reaches a server tool under the name it is offered as): the steps,
// each stop condition firing mid-loop (the pending call runs, then one final turn without tools),
// usage and cost summed against the request log, a client tool beside a server tool, disabled
// tools refused on every route, a preset's stop conditions, and every bad input with its outcome.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../../test/helpers/fake-upstream.ts';
import { space, upstreamEnv, user } from '../../../../test/helpers/inference-fixtures.ts';
import { createIntern } from '../../interns/interns.ts';

/** `data:` payloads of an OpenAI stream. */
const dataOf = (text: string): any[] =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => (f === 'data: [DONE]' ? '[DONE]' : JSON.parse(f.replace(/^data: /, ''))));
/** Named events of an Anthropic or Responses stream. */
const eventsOf = (text: string): { event: string; data: any }[] =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const [e, d] = f.split('\n');
      return { event: e!.replace(/^event: /, ''), data: JSON.parse(d!.replace(/^data: /, '')) };
    });

const SEARCH = [{ type: 'service:tool_search' }];
/** A two-step loop: text, a tool_search call, then text after the result. */
const TWO_STEPS = '/say checking\n/tool tool_search {"query": "time zone"}\n/say done';
const THREE_CALLS = '/tool datetime {}\n/tool datetime {"timezone": "Asia/Tokyo"}\n/tool datetime {}\n/say end';
const cut = (s: string) => [...s].slice(0, 500).join('');

for (const store of storeMatrix) {
  describe(`the server-tool loop (${store.name})`, () => {
    let gw: TestGateway;
    let up: FakeUpstream;
    before(async () => {
      up = await startFakeUpstream();
      gw = await startTestGateway({ postgres: store.postgres, env: upstreamEnv(up) });
    });
    after(async () => {
      await gw.close();
      await up.close();
    });

    test('chat, not streamed: one answer, the step in reasoning_details, usage summed over the turns and equal to the log', async () => {
      const s = await space(gw, 'loop-chat');
      const res = await s.chat({ model: 'local/scripted', tools: SEARCH, messages: [user(TWO_STEPS)] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const m = res.body.choices[0].message;
      const [step] = m.reasoning_details;
      assert.deepEqual(Object.keys(step), [
        'type',
        'id',
        'index',
        'tool_call_id',
        'tool_name',
        'arguments',
        'result',
        'status',
      ]);
      assert.deepEqual(
        { ...step, id: undefined, tool_call_id: undefined },
        {
          type: 'reasoning.server_tool_call',
          id: undefined,
          index: 0,
          tool_call_id: undefined,
          tool_name: 'service:tool_search',
          arguments: '{"query": "time zone"}',
          result: step.result,
          status: 'completed',
        },
      );
      assert.deepEqual(JSON.parse(step.result).tools[0], {
        type: 'service:datetime',
        name: 'datetime',
        description: 'The current date and time, in an IANA time zone (default UTC).',
        available: true,
      });
      assert.equal(m.content, `checkingtool_search: ${cut(step.result)}\ndone`);
      assert.equal(res.body.choices[0].finish_reason, 'stop');
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => [r.id, r.generationId, r.step, r.status, r.finishReason]),
        [
          [`${res.body.id}-1`, res.body.id, 1, 200, 'tool_calls'],
          [`${res.body.id}-2`, res.body.id, 2, 200, 'stop'],
        ],
      );
      const sum = (k: 'promptTokens' | 'completionTokens' | 'totalTokens') => rows.reduce((n, r) => n + r[k]!, 0);
      const cost = Math.round(rows.reduce((n, r) => n + r.cost!, 0) * 1e12) / 1e12;
      assert.deepEqual(res.body.usage, {
        prompt_tokens: sum('promptTokens'),
        completion_tokens: sum('completionTokens'),
        total_tokens: sum('totalTokens'),
        prompt_tokens_details: { cached_tokens: 0 },
        cost,
        is_byok: false,
        server_tool_use_details: { tool_calls_requested: 1, tool_calls_executed: 1 },
      });
      assert.ok(cost > 0);
    });

    test('chat, streamed: the text as it comes, the step as a chunk of its own, one finish, the summed usage, [DONE]', async () => {
      const s = await space(gw, 'loop-chat-stream');
      const res = await s.chat({ model: 'local/scripted', stream: true, tools: SEARCH, messages: [user(TWO_STEPS)] });
      assert.equal(res.status, 200);
      const evs = dataOf(res.body);
      assert.equal(evs.at(-1), '[DONE]');
      const chunks = evs.slice(0, -1);
      assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
      const step = chunks.find((c) => c.choices[0]?.delta.reasoning_details)!.choices[0].delta.reasoning_details[0];
      const deltas = chunks.map((c) => c.choices[0]?.delta ?? 'usage');
      const at = deltas.findIndex((d) => d !== 'usage' && d.reasoning_details);
      assert.deepEqual(deltas.slice(0, at + 1), [
        { role: 'assistant', content: '' },
        { content: 'checking' },
        { reasoning_details: [step] },
      ]);
      assert.equal(
        deltas
          .slice(at + 1, -2)
          .map((d) => {
            assert.deepEqual(Object.keys(d), ['content']);
            return d.content;
          })
          .join(''),
        `tool_search: ${cut(step.result)}\ndone`,
      );
      assert.deepEqual(deltas.slice(-2), [{}, 'usage']);
      assert.deepEqual(
        chunks.map((c) => c.choices[0]?.finish_reason ?? null).filter((f) => f !== null),
        ['stop'],
      );
      assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
      assert.deepEqual(chunks.at(-1).usage.server_tool_use_details, {
        tool_calls_requested: 1,
        tool_calls_executed: 1,
      });
      const rows = await s.log();
      assert.equal(chunks.at(-1).usage.total_tokens, rows[0]!.totalTokens! + rows[1]!.totalTokens!);
    });

    test('messages: server_tool_use and service_tool_result blocks between the text, streamed and not', async () => {
      const s = await space(gw, 'loop-messages');
      const body = { model: 'local/scripted', max_tokens: 200, tools: SEARCH, messages: [user(TWO_STEPS)] };
      const res = await s.messages(body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.content.map((b: { type: string }) => b.type),
        ['text', 'server_tool_use', 'service_tool_result', 'text'],
      );
      const [, use, result] = res.body.content;
      assert.deepEqual(use.input, { query: 'time zone' });
      assert.equal(use.name, 'service:tool_search');
      assert.equal(result.tool_use_id, use.id);
      assert.equal(result.content.tools[0].type, 'service:datetime');
      assert.equal(res.body.stop_reason, 'end_turn');

      const streamed = await s.messages({ ...body, stream: true });
      assert.equal(streamed.status, 200);
      const evs = eventsOf(streamed.body);
      assert.deepEqual(
        evs.filter((e) => e.event === 'content_block_start').map((e) => e.data.content_block.type),
        ['text', 'server_tool_use', 'service_tool_result', 'text'],
      );
      assert.deepEqual(
        evs.filter((e) => e.data.delta?.type === 'input_json_delta').map((e) => e.data.delta.partial_json),
        ['{"query": "time zone"}'],
      );
      assert.equal(evs.at(-2)!.data.delta.stop_reason, 'end_turn');
      assert.equal(evs.at(-1)!.event, 'message_stop');
      assert.equal(evs.filter((e) => e.event === 'message_start').length, 1);
    });

    test('responses: an output item of the tool type between the messages, streamed and not', async () => {
      const s = await space(gw, 'loop-responses');
      const body = { model: 'local/scripted', tools: SEARCH, input: TWO_STEPS };
      const res = await s.responses(body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.output.map((i: { type: string }) => i.type),
        ['message', 'service:tool_search', 'message'],
      );
      const item = res.body.output[1];
      assert.equal(item.status, 'completed');
      assert.equal(item.arguments, '{"query": "time zone"}');
      assert.equal(JSON.parse(item.output).tools[0].name, 'datetime');
      assert.equal(res.body.usage.total_tokens > 0, true);

      const streamed = await s.responses({ ...body, stream: true });
      const evs = eventsOf(streamed.body);
      assert.deepEqual(
        evs.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item.type),
        ['message', 'service:tool_search', 'message'],
      );
      assert.equal(evs.at(-1)!.event, 'response.completed');
      assert.deepEqual(
        evs.at(-1)!.data.response.output.map((i: { type: string }) => i.type),
        ['message', 'service:tool_search', 'message'],
      );
    });

    test('each stop condition fires mid-loop: the pending call runs, then one final turn without tools', async () => {
      const s = await space(gw, 'loop-stop');
      // Costs of the scripted turns here: 0.00001-0.00003 each; tokens about 2-30.
      const cases: [string, unknown[] | null, number | undefined, number][] = [
        ['step_count_is 2', [{ type: 'step_count_is', step_count: 2 }], undefined, 2],
        ['max_cost', [{ type: 'max_cost', max_cost_in_dollars: 0.00002 }], undefined, 2],
        ['max_tokens_used', [{ type: 'max_tokens_used', max_tokens: 20 }], undefined, 2],
        ['has_tool_call', [{ type: 'has_tool_call', tool_name: 'datetime' }], undefined, 1],
        ['finish_reason_is', [{ type: 'finish_reason_is', reason: 'tool_calls' }], undefined, 1],
        ['max_tool_calls', null, 2, 2],
        ['stop conditions override max_tool_calls', [{ type: 'step_count_is', step_count: 3 }], 1, 3],
      ];
      for (const [name, stopWhen, maxCalls, calls] of cases) {
        for (const stream of [false, true]) {
          const res = await s.chat({
            model: 'local/scripted',
            stream,
            tools: [{ type: 'service:datetime' }],
            ...(stopWhen ? { stop_server_tools_when: stopWhen } : {}),
            ...(maxCalls ? { max_tool_calls: maxCalls } : {}),
            messages: [user(THREE_CALLS)],
          });
          assert.equal(res.status, 200, `${name}: ${JSON.stringify(res.body)}`);
          const steps = stream
            ? dataOf(res.body).flatMap((c) => (c === '[DONE]' ? [] : (c.choices[0]?.delta.reasoning_details ?? [])))
            : res.body.choices[0].message.reasoning_details;
          const content = stream
            ? dataOf(res.body)
                .map((c) => (c === '[DONE]' ? '' : (c.choices[0]?.delta.content ?? '')))
                .join('')
            : res.body.choices[0].message.content;
          assert.equal(steps.length, calls, `${name} (stream ${stream}): ${calls} calls run`);
          assert.ok(
            steps.every((st: { status: string }) => st.status === 'completed'),
            name,
          );
          // The final turn had no tools: the scripted model cannot make the next call.
          if (calls < 3) assert.match(content, /Tool datetime is not available\.$/, name);
          else assert.match(content, /\nend$/, name);
        }
      }
      // The final turn is sent with tool_choice none; the tools were offered as function tools.
      const before = up.received.length;
      const res = await s.chat({
        model: 'openai/gpt-4o-mini',
        tools: [{ type: 'service:datetime' }],
        stop_server_tools_when: [{ type: 'step_count_is', step_count: 1 }],
        messages: [user(THREE_CALLS)],
      });
      assert.equal(res.status, 200);
      const sent = up.received.slice(before).map((r) => r.body);
      assert.equal(sent.length, 2);
      assert.equal(sent[0]!.tool_choice, undefined);
      assert.equal(sent[1]!.tool_choice, 'none');
      assert.deepEqual(
        (sent[0]!.tools as { function: { name: string } }[]).map((t) => t.function.name),
        ['datetime'],
      );
      assert.equal(sent[0]!.stop_server_tools_when, undefined);
      assert.deepEqual(
        (sent[1]!.messages as { role: string }[]).map((m) => m.role),
        ['user', 'assistant', 'tool'],
      );
    });

    test("a preset's stop conditions apply to requests made with it", async () => {
      const made = await gw.call('POST', '/presets/one-step/messages', {
        body: {
          model: 'local/scripted',
          stop_server_tools_when: [{ type: 'step_count_is', step_count: 1 }],
          messages: [{ role: 'user', content: 'x' }],
        },
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const res = await gw.call('POST', '/chat/completions', {
        body: { model: '@preset/one-step', tools: [{ type: 'service:datetime' }], messages: [user(THREE_CALLS)] },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.choices[0].message.reasoning_details.length, 1);
    });

    test("a client function tool beside a server tool: the server's runs, the client's comes back to the client", async () => {
      const s = await space(gw, 'loop-client');
      const body = {
        model: 'local/scripted',
        tools: [
          { type: 'service:datetime' },
          { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
        ],
        messages: [user('/tool datetime {}\n/tool lookup {"q": 1}\n/say after')],
      };
      const res = await s.chat(body);
      assert.equal(res.status, 200);
      const choice = res.body.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.reasoning_details.length, 1);
      assert.deepEqual(
        choice.message.tool_calls.map((t: { function: unknown }) => t.function),
        [{ name: 'lookup', arguments: '{"q": 1}' }],
      );
      const streamed = dataOf((await s.chat({ ...body, stream: true })).body).slice(0, -1);
      const calls = streamed.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
      assert.deepEqual(
        calls.map((t) => [t.index, t.function?.name]),
        [[0, 'lookup']],
      );
      assert.equal(streamed.at(-2).choices[0].finish_reason, 'tool_calls');
    });

    test('tool arguments the model got wrong: the error is the tool result the model reads, not a 500', async () => {
      const s = await space(gw, 'loop-args');
      const res = await s.chat({
        model: 'local/scripted',
        tools: [{ type: 'service:datetime' }],
        messages: [user('/tool datetime {"timezone": 5}\n/tool datetime {"timezone": "Mars/Olympus"}\n/say ok')],
      });
      assert.equal(res.status, 200);
      const steps = res.body.choices[0].message.reasoning_details;
      assert.deepEqual(
        steps.map((st: { status: string; result: string }) => [st.status, JSON.parse(st.result)]),
        [
          ['failed', { error: 'invalid arguments: timezone: Invalid input: expected string, received number' }],
          ['failed', { error: 'unknown time zone "Mars/Olympus": use an IANA name such as Europe/Paris' }],
        ],
      );
      assert.match(res.body.choices[0].message.content, /datetime: \{"error":"unknown time zone/);
    });

    test('a tool the workspace disabled is 403 on every route, as a tool or a plugin, before anything is sent', async () => {
      const s = await space(gw, 'loop-disabled', { disabled_server_tools: ['service:datetime', 'service:web_search'] });
      const before = up.received.length;
      const tools = [{ type: 'service:datetime' }];
      const msg = { error: { code: 403, message: 'server tool service:datetime is disabled in this workspace' } };
      for (const stream of [false, true]) {
        for (const res of [
          await s.chat({ model: 'openai/gpt-4o-mini', stream, tools, messages: [user('hi')] }),
          await s.messages({ model: 'openai/gpt-4o-mini', stream, max_tokens: 10, tools, messages: [user('hi')] }),
          await s.responses({ model: 'openai/gpt-4o-mini', stream, tools, input: 'hi' }),
        ]) {
          assert.equal(res.status, 403);
          assert.deepEqual(res.body, msg);
        }
      }
      const plugin = await s.chat({ model: 'openai/gpt-4o-mini', plugins: [{ id: 'web' }], messages: [user('hi')] });
      assert.equal(plugin.status, 403);
      assert.equal(plugin.body.error.message, 'server tool service:web_search is disabled in this workspace');
      // A nested tool of a subagent counts too.
      const nested = await s.chat({
        model: 'local/scripted',
        tools: [{ type: 'service:subagent', parameters: { tools: [{ type: 'service:datetime' }] } }],
        messages: [user('hi')],
      });
      assert.equal(nested.status, 403);
      assert.equal(up.received.length, before);
    });

    test("an intern's key uses server tools only as its workspace allows", async () => {
      const s = await space(gw, 'loop-intern', { disabled_server_tools: ['service:datetime'] });
      const principal = await gw.ctx.auth.authenticate(`Bearer ${s.key}`);
      const { row } = await createIntern(gw.ctx.store.db, {
        principal,
        sealer: gw.ctx.sealer,
        body: { name: 'ada' } as never,
      });
      const key = gw.ctx.sealer.open(row.sealedApiKey!, `${row.id}:api-key`);
      const refused = await s.chat(
        { tools: [{ type: 'service:datetime' }], messages: [user('/tool datetime {}')] },
        key,
      );
      assert.equal(refused.status, 403);
      const allowed = await s.chat({ tools: SEARCH, messages: [user(TWO_STEPS)] }, key);
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      assert.equal(allowed.body.choices[0].message.reasoning_details.length, 1);
    });

    test('bad input: each refused with a 400 naming the field, on every route', async () => {
      const s = await space(gw, 'loop-bad');
      const cases: [Record<string, unknown>, string][] = [
        [
          { tools: [{ type: 'service:nope' }] },
          'tools.0.type: unknown server tool service:nope: one of service:advisor',
        ],
        [
          { tools: [{ type: 'service:datetime', parameters: { timezone: 'Mars/Base' } }] },
          'tools.0.parameters.timezone: must be an IANA time zone',
        ],
        [
          { tools: [{ type: 'service:datetime', parameters: { zone: 'UTC' } }] },
          'tools.0.parameters: unknown setting zone',
        ],
        [{ stop_server_tools_when: [] }, 'stop_server_tools_when: Too small: expected array to have >=1 items'],
        [
          { stop_server_tools_when: [{ type: 'when_bored' }] },
          'stop_server_tools_when.0.type: must be a stop condition',
        ],
        [
          { stop_server_tools_when: [{ type: 'step_count_is', step_count: -1 }] },
          'stop_server_tools_when.0.step_count: Too small',
        ],
        [
          { stop_server_tools_when: [{ type: 'max_cost', max_cost_in_dollars: -0.5 }] },
          'stop_server_tools_when.0.max_cost_in_dollars: Too small',
        ],
        [{ stop_server_tools_when: [{ type: 'step_count_is' }] }, 'stop_server_tools_when.0.step_count: Invalid input'],
        [{ max_tool_calls: 0 }, 'max_tool_calls: Too small: expected number to be >=1'],
        [{ max_tool_calls: 31 }, 'max_tool_calls: Too big: expected number to be <=30'],
        [{ plugins: [{ id: 'web', max_results: 0 }] }, 'plugins.0.max_results: Too small'],
        [
          { plugins: [{ id: 'web-fetch', engine: 'exa' }] },
          'plugins.0.engine: unknown setting of the web-fetch plugin',
        ],
      ];
      for (const [extra, message] of cases) {
        for (const [route, body] of [
          ['chat', { model: 'local/scripted', messages: [user('hi')], ...extra }],
          ['messages', { model: 'local/scripted', max_tokens: 10, messages: [user('hi')], ...extra }],
          ['responses', { model: 'local/scripted', input: 'hi', ...extra }],
        ] as const) {
          const res = await s[route](body);
          assert.equal(res.status, 400, `${route} ${JSON.stringify(extra)}: ${JSON.stringify(res.body)}`);
          assert.ok(
            res.body.error.message.startsWith(`invalid request parameters: ${message}`),
            `${route}: ${res.body.error.message}`,
          );
        }
      }
      // The name a server tool is offered under cannot be a client function's too.
      const clash = await s.chat({
        model: 'local/scripted',
        tools: [{ type: 'service:datetime' }, { type: 'function', function: { name: 'datetime' } }],
        messages: [user('hi')],
      });
      assert.equal(clash.status, 400);
      assert.equal(
        clash.body.error.message,
        'invalid request parameters: tools: the function name datetime is the name server tool service:datetime is offered under',
      );
    });

    test('a tool the operator has not configured is a 400 naming what to configure', async () => {
      const s = await space(gw, 'loop-unconfigured');
      const cases: [unknown, string][] = [
        [
          { type: 'service:web_search' },
          'tools.0: service:web_search: no search backend is configured on this gateway: its operator sets COHORT_WEB_SEARCH_PROVIDER (searxng, brave or tavily)',
        ],
        [
          { type: 'service:web_fetch' },
          'tools.0: service:web_fetch: no egress for web tools is configured on this gateway: its operator sets COHORT_WEB_FETCH_EGRESS (or COHORT_INTERN_EGRESS)',
        ],
        [
          { type: 'service:advisor' },
          'tools.0: service:advisor: no advisor model: set parameters.model on the tool, or the operator sets COHORT_ADVISOR_MODEL',
        ],
        [
          { type: 'service:fusion' },
          'tools.0: service:fusion: no models to ask: set parameters.analysis_models on the tool, or the operator sets COHORT_FUSION_MODELS',
        ],
        [
          { type: 'service:image_generation' },
          "tools.0: service:image_generation: no image model: set the workspace's default_image_model, or parameters.model on the tool",
        ],
        [
          { type: 'service:advisor', parameters: { model: 'nowhere/model' } },
          'tools.0.parameters.model: nowhere/model names no known provider',
        ],
      ];
      for (const [tool, message] of cases) {
        const res = await s.chat({ model: 'local/scripted', tools: [tool], messages: [user('hi')] });
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.ok(res.body.error.message.startsWith(`invalid request parameters: ${message}`), res.body.error.message);
      }
    });
  });
}
