// The intern's tool calls on the chat stream (docs/reference/tool-events.md): with
// `X-Cohort-Tool-Events: 1` each call arrives as `cohort_tool` chunks (empty delta) as it starts
// and when it ends, in self-drive and after a manual approval; without the header the stream is the
// plain one; any other value is refused with 400, before a turn starts. A real gateway, a real
// intern daemon and sandbox, the scripted model.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readChat, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { callOf, text, tool, user } from './helpers/chat.ts';
import { noSandbox } from './helpers/sandbox.ts';

describe('tool calls as cohort_tool chunks', { skip: noSandbox }, () => {
  let f: InternFixture;
  let id: string;
  before(async () => {
    f = await startInternFixture();
    id = await f.intern('tools');
  });
  after(() => f.close());
  const chat = async (body: unknown, header?: string) =>
    readChat(
      await fetch(`${f.gw.url}/interns/${id}/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${f.gw.keys.api_key}`,
          'content-type': 'application/json',
          ...(header === undefined ? {} : { 'x-cohort-tool-events': header }),
        },
        body: JSON.stringify(body),
      }),
    );
  const tools = (r: { chunks: any[] }) => r.chunks.filter((c) => c.cohort_tool);

  test('self-drive: the command as it starts, then its output; the answer’s text is unchanged', async () => {
    const r = await chat(user('/shell echo tool-out'), '1');
    assert.equal(r.status, 200);
    assert.ok(r.done);
    const events = tools(r);
    assert.deepEqual(
      events.map((c) => [c.choices, c.cohort_tool]),
      [
        [
          [{ index: 0, delta: {}, finish_reason: null }],
          {
            id: events[0].cohort_tool.id,
            title: 'shell',
            kind: 'execute',
            status: 'in_progress',
            input: 'echo tool-out',
            output: null,
          },
        ],
        [
          [{ index: 0, delta: {}, finish_reason: null }],
          {
            id: events[0].cohort_tool.id,
            title: null,
            kind: null,
            status: 'completed',
            input: null,
            output: 'tool-out\n[exit 0]',
          },
        ],
      ],
    );
    assert.match(events[0].cohort_tool.id, /^call_/);
    assert.equal(text(r), 'shell: tool-out\n[exit 0]');

    const plain = await chat(user('/shell echo tool-out'));
    assert.equal(plain.status, 200);
    assert.deepEqual(tools(plain), []);
    assert.equal(text(plain), text(r));
    assert.equal(plain.chunks.length, r.chunks.length - 2, 'the plain stream lacks exactly the two tool chunks');
    const zero = await chat(user('/say hi'), '0');
    assert.equal(zero.status, 200);
    assert.deepEqual(tools(zero), []);
  });

  test('manual: the call is announced, then the permission pauses the run; the reply’s stream carries its end', async () => {
    const first = await chat(user('/shell echo allowed', { approval_mode: 'manual' }), '1');
    const started = tools(first).map((c) => c.cohort_tool);
    assert.deepEqual(
      started.map((t) => [t.status, t.input, t.output]),
      [['in_progress', 'echo allowed', null]],
    );
    const call = callOf(first);
    assert.equal(JSON.parse(call.function.arguments).kind, 'permission');
    const done = await chat(tool(first.chunks.at(-1).session_id, call.id, 'allow_once'), '1');
    assert.equal(done.status, 200);
    assert.deepEqual(
      tools(done).map((c) => [c.cohort_tool.id, c.cohort_tool.status, c.cohort_tool.output]),
      [[started[0].id, 'completed', 'allowed\n[exit 0]']],
    );
  });

  test('a header value other than 1 or 0 is refused with 400 naming it, and starts no turn', async () => {
    const r = await chat(user('/shell touch /intern/work/refused'), 'yes');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, {
      error: {
        code: 400,
        message:
          'invalid request parameters: X-Cohort-Tool-Events header: must be 1 (tool calls as cohort_tool chunks) or 0',
        metadata: { reason: 'bad_request', retryable: false },
      },
    });
    const check = await chat(user('/shell ls /intern/work/refused 2>&1; true'), '1');
    assert.match(tools(check)[1].cohort_tool.output, /No such file/);
  });
});
