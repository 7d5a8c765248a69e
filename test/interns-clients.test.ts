// The chat route as clients meet it: the `openai` npm client through a full pause-and-reply,
// client disconnects at each point of a stream, and generated bodies (never a 500, only
// documented statuses and bodies).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import fc from 'fast-check';
import { chatOnceFree, daemonStatus, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { waitFor } from './helpers/wait.ts';
import { REASONS } from '../src/gateway/errors.ts';
import { user } from './helpers/chat.ts';

async function readUntil(res: Response, marker: string) {
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes(marker)) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
  }
  return { reader, seen };
}

describe('intern chat with real clients', () => {
  let f: InternFixture;
  let id: string;
  before(async () => {
    f = await startInternFixture({ env: { COHORT_ROUTE_DEADLINE_MS: '5000' } });
    id = await f.intern('clients');
  });
  after(() => f.close());

  test('the openai client streams a turn, receives the tool call, and its reply continues the run', async () => {
    const client = new OpenAI({ baseURL: `${f.gw.url}/interns/${id}`, apiKey: f.gw.keys.api_key });
    const first = await client.chat.completions.create({
      model: 'ignored',
      stream: true,
      messages: [{ role: 'user', content: '/say hi\n/ask Favourite number?' }],
    });
    let content = '';
    let call: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall | undefined;
    let sessionId: string | undefined;
    const finishes: string[] = [];
    for await (const chunk of first) {
      const c = chunk.choices[0];
      content += c?.delta.content ?? '';
      call ??= c?.delta.tool_calls?.[0];
      if (c?.finish_reason) finishes.push(c.finish_reason);
      if (!chunk.choices.length) sessionId = (chunk as unknown as { session_id: string }).session_id;
    }
    assert.equal(content, 'hi');
    assert.deepEqual(finishes, ['tool_calls']);
    assert.equal(call?.function?.name, 'service.provide_input');
    assert.ok(sessionId);
    const answer = JSON.stringify({ action: 'accept', content: { answer: '42' } });
    const second = await client.chat.completions.create({
      model: 'ignored',
      stream: true,
      session_id: sessionId,
      messages: [
        { role: 'user', content: '/say hi\n/ask Favourite number?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: call!.id!,
              type: 'function',
              function: { name: call!.function!.name!, arguments: call!.function!.arguments! },
            },
          ],
        },
        { role: 'tool', tool_call_id: call!.id!, content: answer },
      ],
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
    let rest = '';
    for await (const chunk of second) rest += chunk.choices[0]?.delta.content ?? '';
    assert.match(rest, /42/);
  });

  test('disconnect before the first output cancels the run', async () => {
    const ac = new AbortController();
    const pending = f.open(id, user('/sleep 30000\n/say never'), { signal: ac.signal }).catch(() => null);
    await waitFor('the run started', async () => (await daemonStatus(f, id)).turn !== null);
    ac.abort();
    await pending;
    const next = await chatOnceFree(f, id, user('/say free'));
    assert.equal(next.status, 200);
    assert.equal(next.chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'free');
  });

  test('disconnect after the [DONE] that follows tool_calls leaves the run paused; a later reply continues it', async () => {
    const res = await f.open(id, user('/ask Ready?'));
    const { reader, seen } = await readUntil(res, 'data: [DONE]');
    await reader.cancel();
    const parsed = seen
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)));
    const call = parsed.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])[0];
    const sid = parsed.at(-1).session_id;
    await waitFor('the daemon saw the client leave the paused run', async () =>
      (await daemonStatus(f, id)).runs.some((r) => r.session_id === sid && r.phase === 'paused' && !r.attached),
    );
    const cont = await f.chat(id, {
      stream: true,
      session_id: sid,
      messages: [
        {
          role: 'tool',
          tool_call_id: call.id,
          content: JSON.stringify({ action: 'accept', content: { answer: 'yes' } }),
        },
      ],
    });
    assert.equal(cont.status, 200);
    assert.match(cont.chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), /yes/);
  });

  test('disconnect while a continued run streams cancels it', async () => {
    const paused = await f.chat(id, user('/ask Go?\n/say going\n/sleep 30000\n/say never'));
    const call = paused.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])[0];
    const sid = paused.chunks.at(-1).session_id;
    const ac = new AbortController();
    const res = await f.open(
      id,
      {
        stream: true,
        session_id: sid,
        messages: [
          {
            role: 'tool',
            tool_call_id: call.id,
            content: JSON.stringify({ action: 'accept', content: { answer: 'go' } }),
          },
        ],
      },
      { signal: ac.signal },
    );
    await readUntil(res, '"content"');
    ac.abort();
    assert.equal((await chatOnceFree(f, id, user('/say free again'))).status, 200);
  });

  test('property: generated bodies get only documented statuses and bodies, never a 500', async () => {
    const documented = new Set([200, 202, 400, 404, 408, 409, 410, 413, 429, 502, 503, 504]);
    const content = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.array(fc.record({ type: fc.constantFrom('text', 'image'), text: fc.string({ maxLength: 10 }) }), {
        maxLength: 2,
      }),
      fc.constant(null),
      fc.integer(),
    );
    const message = fc.record(
      {
        role: fc.constantFrom('user', 'tool', 'assistant', 'system', 'developer', 'robot'),
        content,
        tool_call_id: fc.string({ maxLength: 130 }),
        tool_calls: fc.anything(),
      },
      { requiredKeys: ['role'] },
    );
    const body = fc.oneof(
      fc.record(
        {
          stream: fc.oneof(fc.constant(true), fc.anything()),
          messages: fc.array(message, { maxLength: 3 }),
          session_id: fc.string({ maxLength: 260 }),
          approval_mode: fc.constantFrom('manual', 'self-drive', 'x'),
          model: fc.string({ maxLength: 260 }),
          temperature: fc.anything(),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await f.chat(id, b);
        assert.ok(documented.has(r.status), `status ${r.status} for ${JSON.stringify(b)}`);
        if (r.status === 200) {
          assert.equal(r.done, true);
          return;
        }
        if (r.status === 202) return assert.equal(r.body.status, 'steered');
        const e = r.body.error;
        assert.equal(e.code, r.status);
        assert.equal(typeof e.message, 'string');
        assert.ok((REASONS as readonly string[]).includes(e.metadata.reason));
        assert.equal(typeof e.metadata.retryable, 'boolean');
      }),
      { numRuns: 80 },
    );
  });
});
