// End to end, one test per run state, rule and status of docs/reference/intern-chat.md: gateway, real daemon
// processes started by the local provisioner, the built-in agent, the scripted model.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { sql } from 'drizzle-orm';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertChatStream as assertShape,
  chatOnceFree,
  daemonAnswers,
  daemonRequest,
  daemonStatus,
  parseSse,
  rest,
  startInternFixture,
  untilContent,
  type ChatResult,
  type InternFixture,
} from '../../../test/helpers/interns.ts';
import { getInternById, secretBinding } from './interns.ts';
import { daemonPaths } from '../../shared/daemon-protocol.ts';
import { noSandbox } from '../../../test/helpers/sandbox.ts';
import { user, tool, text, callOf, finish, final } from '../../../test/helpers/chat.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

/** Long enough that a question stays paused through the steering test's other turns on a loaded
 * machine (at 1.5 s it once ended first). */
const INTERACTION_DEADLINE_MS = 3000;
const ENV = {
  COHORT_KEEPALIVE_MS: '300',
  COHORT_ROUTE_DEADLINE_MS: '1500',
  COHORT_TURN_BUDGET_MS: '3000',
  COHORT_INTERACTION_DEADLINE_MS: String(INTERACTION_DEADLINE_MS),
  COHORT_MAX_PAUSED_RUNS: '2',
};

describe('intern chat stream, end to end', () => {
  let f: InternFixture;
  let id: string;
  before(async () => {
    f = await startInternFixture({ env: ENV });
    id = await f.intern('chatty');
  });
  after(() => f.close());

  /** Until the daemon has ended every run of `session`. */
  const runsEnded = (session: string) =>
    waitFor(`the daemon has no run of session ${session}`, async () =>
      (await daemonStatus(f, id)).runs.every((r) => r.session_id !== session),
    );
  /** Until no run holds the intern's turn lock (a timed-out run is cancelled; the next test's turn must not be busy). */
  const turnFree = () => waitFor('no run holds the turn lock', async () => (await daemonStatus(f, id)).turn === null);

  test('request validation: 400 bad_request naming the field, retryable false', async () => {
    const cases: [unknown, RegExp][] = [
      [{ messages: [{ role: 'user', content: 'hi' }] }, /stream/],
      [{ stream: false, messages: [{ role: 'user', content: 'hi' }] }, /stream/],
      [{ stream: true, messages: [] }, /messages/],
      [{ stream: true }, /messages/],
      [user('x'.repeat(32_001)), /messages\.0\.content/],
      [user(''), /messages\.0\.content/],
      [user('hi', { session_id: '' }), /session_id/],
      [user('hi', { session_id: 's'.repeat(257) }), /session_id/],
      [user('hi', { model: '' }), /model/],
      [user('hi', { model: 'm'.repeat(257) }), /model/],
      [user('hi', { approval_mode: 'yolo' }), /approval_mode/],
      [user(42), /messages\.0\.content/],
      [user([{ type: 'image_url', url: 'x' }]), /messages\.0\.content/],
      [{ stream: true, messages: [{ role: 'robot', content: 'x' }] }, /messages\.0/],
      [{ stream: true, messages: [{ role: 'system', content: 'x' }] }, /messages\.0\.role/],
      [{ stream: true, messages: [{ role: 'assistant', content: null }] }, /messages\.0\.role/],
      [{ stream: true, messages: [{ role: 'tool', tool_call_id: 'a', content: 'allow_once' }] }, /session_id/],
      [tool('s', '', 'x'), /tool_call_id/],
      [tool('s', 'i'.repeat(129), 'x'), /tool_call_id/],
      [
        {
          stream: true,
          messages: [
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'i'.repeat(129), function: { name: 'f', arguments: '{}' } }],
            },
            { role: 'user', content: 'x' },
          ],
        },
        /tool_calls/,
      ],
    ];
    for (const [body, field] of cases) {
      const r = await f.chat(id, body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 200));
      assert.match(r.body.error.message, field);
      assert.deepEqual(r.body.error.metadata, { reason: 'bad_request', retryable: false });
    }
    const malformed = await fetch(`${f.gw.url}/interns/${id}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.gw.keys.api_key}`, 'content-type': 'application/json' },
      body: '{"stream":',
    });
    assert.deepEqual((await malformed.json()).error.metadata, { reason: 'bad_request', retryable: false });
    // 32,000 characters, 64,000 UTF-16 units: within the limit.
    const emoji = await f.chat(id, user('😀'.repeat(32_000)));
    assert.equal(emoji.status, 200);
    assert.equal(text(emoji), `You said: ${'😀'.repeat(32_000)}`);
  });

  test('limits: a body over 1 MiB is 413 payload_too_large before it is parsed', async () => {
    const res = await fetch(`${f.gw.url}/interns/${id}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.gw.keys.api_key}`, 'content-type': 'application/json' },
      body: '{' + ' '.repeat(1_048_576),
    });
    assert.equal(res.status, 413);
    assert.deepEqual(await res.json(), {
      error: {
        code: 413,
        message: 'request body exceeds 1 MiB (1048576 bytes)',
        metadata: { reason: 'payload_too_large', retryable: false },
      },
    });
  });

  test('statuses: unknown intern 404 not_found; an intern not running 409 intern_not_ready', async () => {
    const r = await f.chat('5b0e2f9c-1111-4111-8111-111111111111', user('hi'));
    assert.deepEqual(r.body, {
      error: { code: 404, message: 'resource not found: intern', metadata: { reason: 'not_found', retryable: false } },
    });
    const queued = (await f.gw.call('POST', '/interns', { body: { name: 'idle' } })).body.id;
    const q = await f.chat(queued, user('hi'));
    assert.equal(q.status, 409);
    assert.deepEqual(q.body.error, {
      code: 409,
      message: `the intern is not running (status queued): it was never provisioned; POST /api/v1/interns/${queued}/provision starts it (or create it with "provision": true)`,
      metadata: { reason: 'intern_not_ready', retryable: true },
    });
  });

  test('run states: running → completed: role, reasoning, content, stop, final chunk with session and usage, [DONE]', async () => {
    const r = await f.chat(
      id,
      user(
        [
          { type: 'text', text: '/think pondering\n' },
          { type: 'text', text: '/say hello world' },
        ],
        { temperature: 0.2, tools: [] },
      ),
    );
    assertShape(r);
    assert.equal(
      r.chunks
        .map((c) => c.choices[0]?.delta.reasoning ?? '')
        .join('')
        .trim(),
      'pondering',
    );
    assert.equal(text(r), 'hello world');
    assert.deepEqual(finish(r), ['stop']);
    const last = final(r);
    assert.match(last.session_id, /\S/);
    assert.ok(last.usage.total_tokens > 0);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
    assert.ok(r.chunks.every((c) => c.model === 'local/scripted'));
    const again = await f.chat(id, user('/say more', { session_id: last.session_id }));
    assert.equal(final(again).session_id, last.session_id);
    const fresh = await f.chat(id, user('/say fork', { session_id: 'my-own-session' }));
    assert.equal(final(fresh).session_id, 'my-own-session');
  });

  test('run states: paused on a question; the tool reply continues the same run; a second reply is 409 interaction_not_pending', async () => {
    const r = await f.chat(id, user('/say let me ask\n/ask What is your name?'));
    assertShape(r);
    assert.deepEqual(finish(r), ['tool_calls']);
    const call = callOf(r);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'service.provide_input');
    assert.deepEqual(JSON.parse(call.function.arguments), {
      kind: 'elicitation',
      message: 'What is your name?',
      fields: [{ name: 'answer', type: 'string', required: true, options: [] }],
    });
    assert.equal(final(r).usage, null);
    const sid = final(r).session_id;
    const answer = JSON.stringify({ action: 'accept', content: { answer: 'Ada' } });
    const unknown = await f.chat(id, tool(sid, 'call_nope', answer));
    assert.deepEqual(unknown.body.error.metadata, { reason: 'interaction_unknown', retryable: false });
    assert.equal(unknown.status, 404);
    const wrongField = await f.chat(id, tool(sid, call.id, JSON.stringify({ action: 'accept', content: {} })));
    assert.equal(wrongField.status, 400);
    assert.deepEqual(wrongField.body.error.metadata, { reason: 'bad_request', retryable: false });
    const cont = await f.chat(id, {
      stream: true,
      session_id: sid,
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: [{ type: 'text', text: answer }] },
      ],
    });
    assertShape(cont);
    assert.deepEqual(
      [...new Set(cont.chunks.map((c) => c.model))],
      ['local/scripted'],
      'the continued stream carries the model the intern reported',
    );
    assert.match(text(cont), /Ada/);
    assert.deepEqual(finish(cont), ['stop']);
    assert.equal(final(cont).session_id, sid);
    const twice = await f.chat(id, tool(sid, call.id, answer));
    assert.equal(twice.status, 409);
    assert.deepEqual(twice.body.error.metadata, { reason: 'interaction_not_pending', retryable: false });
  });

  test('run states: manual mode asks permission; a rejected answer is 400 and the run stays paused; allow_once continues', {
    skip: noSandbox,
  }, async () => {
    const r = await f.chat(id, user('/shell echo hi-from-shell', { approval_mode: 'manual' }));
    assertShape(r);
    const call = callOf(r);
    const args = JSON.parse(call.function.arguments);
    assert.equal(args.kind, 'permission');
    assert.ok(args.options.includes('allow_once'));
    const sid = final(r).session_id;
    const bad = await f.chat(id, tool(sid, call.id, 'maybe'));
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.error.metadata, { reason: 'bad_request', retryable: false });
    const ok = await f.chat(id, tool(sid, call.id, 'allow_once'));
    assertShape(ok);
    assert.match(text(ok), /hi-from-shell/);
  });

  test('run states: the interaction deadline cancels a paused run: a late reply is 409 interaction_not_pending', async () => {
    const r = await f.chat(id, user('/ask Still there?'));
    const sid = final(r).session_id;
    // The deadline passes and the daemon cancels the paused run.
    await runsEnded(sid);
    const late = await f.chat(
      id,
      tool(sid, callOf(r).id, JSON.stringify({ action: 'accept', content: { answer: 'yes' } })),
    );
    assert.equal(late.status, 409);
    assert.deepEqual(late.body.error.metadata, { reason: 'interaction_not_pending', retryable: false });
  });

  test('rules 2–3: steer 202; busy 409 with Retry-After; a paused run does not hold the turn lock', async () => {
    const paused = await f.chat(id, user('/ask Which colour?'));
    const pSid = final(paused).session_id;
    const pCall = callOf(paused);
    const res = await f.open(id, user('/say go\n/sleep 800\n/say end', { session_id: 'steer-me' }));
    assert.equal(res.status, 200, 'a prompt starts while another session waits for an answer');
    const { reader, seen } = await untilContent(res);
    const steer = await f.chat(id, user('and also this', { session_id: 'steer-me' }));
    assert.equal(steer.status, 202);
    assert.deepEqual(steer.body, { session_id: 'steer-me', status: 'steered' });
    const replies = [
      tool(pSid, pCall.id, JSON.stringify({ action: 'accept', content: { answer: 'red' } })),
      // Rule 3 names every tool reply, so one naming nothing that waits is busy too, not 404.
      tool('no-such-session', 'call_nope', 'allow_once'),
      tool('steer-me', 'call_nope', 'allow_once'),
    ];
    for (const body of [user('/say hi'), user('/say hi', { session_id: 'other' }), ...replies]) {
      const busy = await f.chat(id, body);
      assert.equal(busy.status, 409, JSON.stringify(body));
      // Never another caller's session id: it is the only handle on their conversation.
      assert.deepEqual(busy.body.error, {
        code: 409,
        message: 'another turn is running on this intern',
        metadata: { reason: 'busy', retryable: true },
      });
      assert.match(busy.headers.get('retry-after')!, /^\d+$/);
    }
    const all = await rest(reader, seen);
    assert.match(
      parseSse(all)
        .chunks.map((c) => c.choices[0]?.delta.content ?? '')
        .join(''),
      /and also this/,
    );
    assert.match(all, /data: \[DONE\]/);
    const after = await f.chat(
      id,
      tool(pSid, pCall.id, JSON.stringify({ action: 'accept', content: { answer: 'red' } })),
    );
    assert.match(text(after), /red/);
  });

  test('events: a quiet stream carries `: keepalive` comments', async () => {
    const r = await f.chat(id, user('/say a\n/sleep 800\n/say b'));
    assertShape(r);
    assert.match(r.text, /\n: keepalive\n/);
    assert.match(text(r), /^a\s*b$/);
  });

  test('run states: a client that disconnects while streaming cancels the run (the turn lock is free again)', async () => {
    const ac = new AbortController();
    const res = await f.open(id, user('/say start\n/sleep 30000\n/say never'), { signal: ac.signal });
    await untilContent(res);
    ac.abort();
    const next = await chatOnceFree(f, id, user('/say next'));
    assertShape(next);
    assert.equal(text(next), 'next');
  });

  test('run states: an ending the intern confirms while the client is connected: 410 run_ended chunk, final, [DONE]', async () => {
    const res = await f.open(id, user('/say before\n/sleep 2000\n/say after', { session_id: 'to-cancel' }));
    const { reader, seen } = await untilContent(res);
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    const secret = f.gw.ctx.sealer.open(row.sealedSecret!, secretBinding.daemon(id));
    const cancel = await daemonRequest(row.hostname!, daemonPaths.cancelSession('to-cancel'), {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(cancel.status, 200);
    const all = await rest(reader, seen);
    const chunks = all
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)));
    const err = chunks.find((c) => c.choices[0]?.finish_reason === 'error');
    assert.deepEqual(err.error.metadata, { reason: 'run_ended', retryable: false });
    assert.equal(err.error.code, 410);
    assert.equal(err.model, 'service/intern');
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.equal(chunks.at(-1).session_id, 'to-cancel');
    assert.ok(all.trimEnd().endsWith('data: [DONE]'));
  });

  test('statuses: 408 timeout past the route deadline before any output (retryable)', async () => {
    const r = await f.chat(id, user('/sleep 2000\n/say late'));
    assert.equal(r.status, 408);
    assert.deepEqual(r.body.error.metadata, { reason: 'timeout', retryable: true });
    await turnFree();
  });

  test('statuses: 504 past the turn budget after the stream opened: timeout error chunk, final, [DONE]', async () => {
    const r = await f.chat(id, user('/say quick\n/sleep 4000\n/say slow'));
    assertShape(r);
    const err = r.chunks.find((c) => c.choices[0]?.finish_reason === 'error');
    assert.deepEqual(err.error, {
      code: 504,
      message: err.error.message,
      metadata: { reason: 'timeout', retryable: true },
    });
    assert.equal(final(r).model, 'service/intern');
    await turnFree();
  });

  test('statuses: turn_failed before output: 502 with the intern’s retryable classification', async () => {
    const retry = await f.chat(id, user('/fail 429'));
    assert.equal(retry.status, 502);
    assert.deepEqual(retry.body.error.metadata, { reason: 'turn_failed', retryable: true });
    const fatal = await f.chat(id, user('/fail 400'));
    assert.equal(fatal.status, 502);
    assert.deepEqual(fatal.body.error.metadata, { reason: 'turn_failed', retryable: false });
    // The model route's own 502 for a provider's malformed answer says a retry cannot fix it.
    const malformed = await f.chat(id, user('/fail 200'));
    assert.equal(malformed.status, 502);
    assert.deepEqual(malformed.body.error.metadata, { reason: 'turn_failed', retryable: false });
  });

  test('statuses: 503 busy with Retry-After when the intern cannot hold another paused run', async () => {
    let last: ChatResult | null = null;
    for (let i = 0; i < 4 && last?.status !== 503; i++)
      last = await f.chat(id, user(`/ask Question ${i}?`, { session_id: `cap-${i}` }));
    assert.ok(last);
    const err =
      last.status === 503 ? last.body.error : last.chunks.find((c) => c.choices[0]?.finish_reason === 'error')?.error;
    assert.equal(err.code, 503);
    assert.deepEqual(err.metadata, { reason: 'busy', retryable: true });
    if (last.status === 503) assert.match(last.headers.get('retry-after')!, /^\d+$/);
  });

  test('standing instructions reach the agent, which calls the model with the intern’s own key and model', async () => {
    await f.gw.call('PATCH', `/workspaces/${f.gw.keys.workspace_id}`, {
      body: { is_observability_io_logging_enabled: true, io_logging_sampling_rate: 1 },
    });
    // No wait: a management write drops the routing cache at once (src/gateway/http/app.ts, dropsRoutingCache).
    const briefed = await f.intern('briefed', { instructions: 'Always answer in one word.', model: 'local/scripted' });
    assert.equal(text(await f.chat(briefed, user('/say fine'))), 'fine');
    const row = (await getInternById(f.gw.ctx.store.db, briefed))!;
    type Logged = { requested_model: string; request_body: { messages: { role: string; content: string }[] } | null };
    // The request log is written in batches.
    const rows = await waitFor('the agent used the intern key (a request logged under it)', async () => {
      const res = await f.gw.ctx.store.db.execute(
        sql`select requested_model, request_body from inference_requests where api_key_id = ${row.apiKeyId}`,
      );
      const got = (res as unknown as { rows: Logged[] }).rows;
      return got.length > 0 ? got : null;
    });
    assert.equal(rows[0]!.requested_model, 'local/scripted');
    assert.deepEqual(rows[0]!.request_body?.messages[0], { role: 'system', content: 'Always answer in one word.' });
  });

  test('lifecycle with a live daemon: suspend stops it (409 intern_not_ready), provision starts a new one, delete removes its directory', async () => {
    const id2 = await f.intern('cycle');
    const first = (await getInternById(f.gw.ctx.store.db, id2))!.hostname!;
    assert.deepEqual((await f.gw.call('POST', `/interns/${id2}/suspend`)).body, { suspended: true });
    const stopped = await f.chat(id2, user('/say hi'));
    assert.equal(stopped.status, 409);
    assert.deepEqual(stopped.body.error, {
      code: 409,
      message: `the intern is not running (status stopped): it is suspended; POST /api/v1/interns/${id2}/provision starts it again`,
      metadata: { reason: 'intern_not_ready', retryable: true },
    });
    assert.equal(await daemonAnswers(first), false, 'the daemon is gone');
    assert.equal((await f.gw.call('POST', `/interns/${id2}/provision`)).status, 202);
    await f.gw.ctx.interns.idle();
    const again = (await f.gw.call('GET', `/interns/${id2}`)).body;
    assert.equal(again.status, 'running');
    const address = (await getInternById(f.gw.ctx.store.db, id2))!.hostname!;
    assert.equal(text(await f.chat(id2, user('/say back'))), 'back');
    const dir = join(f.gw.dataDir, 'interns', id2);
    assert.ok(existsSync(dir));
    assert.equal((await f.gw.call('DELETE', `/interns/${id2}`)).status, 202);
    await f.gw.ctx.interns.idle();
    assert.equal(existsSync(dir), false);
    assert.equal((await f.gw.call('GET', `/interns/${id2}`)).status, 404);
    assert.equal(await daemonAnswers(address), false);
  });

  test('faults: daemon killed mid-stream → stream_severed, final, [DONE]; then 502 intern_unreachable', async () => {
    const victim = await f.intern('victim');
    const res = await f.open(victim, user('/say doomed\n/sleep 3000\n/say never'));
    const { reader, seen } = await untilContent(res);
    await f.killDaemon(victim);
    const all = await rest(reader, seen);
    const chunks = all
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)));
    const err = chunks.find((c) => c.choices[0]?.finish_reason === 'error');
    assert.equal(err.error.metadata.reason, 'stream_severed');
    assert.equal(err.error.metadata.retryable, true);
    assert.deepEqual([err.model, chunks.at(-1).model], ['service/intern', 'service/intern']);
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.ok(all.trimEnd().endsWith('data: [DONE]'));
    const gone = await f.chat(victim, user('/say hi'));
    assert.equal(gone.status, 502);
    assert.deepEqual(gone.body.error.metadata, { reason: 'intern_unreachable', retryable: true });
  });

  test('suspending an intern mid-stream ends the run as confirmed: 410 run_ended, final chunk, [DONE]', async () => {
    const paused = await f.intern('suspended-mid-stream');
    const res = await f.open(paused, user('/say doomed\n/sleep 30000\n/say never'));
    const { reader, seen } = await untilContent(res);
    assert.deepEqual((await f.gw.call('POST', `/interns/${paused}/suspend`)).body, { suspended: true });
    const { chunks, done } = parseSse(await rest(reader, seen));
    const err = chunks.find((c) => c.choices[0]?.finish_reason === 'error');
    assert.deepEqual(err.error, {
      code: 410,
      message: 'the intern is stopping; the run was cancelled',
      metadata: { reason: 'run_ended', retryable: false },
    });
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.equal(chunks.at(-1).usage, null);
    assert.equal(done, true);
  });

  test('a chat that finds the daemon gone marks the intern failed; the next chat is 409 intern_not_ready and a provision brings it back', async () => {
    const lost = await f.intern('lost');
    await f.killDaemon(lost);
    const gone = await f.chat(lost, user('/say hi'));
    assert.equal(gone.status, 502);
    assert.deepEqual(gone.body.error, {
      code: 502,
      message: 'the intern could not be reached: ECONNREFUSED',
      metadata: { reason: 'intern_unreachable', retryable: true },
    });
    await f.gw.ctx.interns.idle();
    const got = (await f.gw.call('GET', `/interns/${lost}`)).body;
    assert.deepEqual(
      [got.status, got.hostname, got.last_failure_message],
      ['failed', null, 'the daemon stopped answering (connection refused); provision the intern again'],
    );
    const notReady = await f.chat(lost, user('/say hi'));
    assert.equal(notReady.status, 409);
    assert.deepEqual(notReady.body.error, {
      code: 409,
      message: `the intern is not running (status failed): GET /api/v1/interns/${lost} says why in last_failure_message; POST /api/v1/interns/${lost}/provision starts it again`,
      metadata: { reason: 'intern_not_ready', retryable: true },
    });
    assert.equal((await f.gw.call('POST', `/interns/${lost}/provision`)).status, 202);
    await f.gw.ctx.interns.idle();
    const back = (await f.gw.call('GET', `/interns/${lost}`)).body;
    assert.deepEqual([back.status, back.last_failure_message], ['running', null]);
    assert.equal(text(await f.chat(lost, user('/say back'))), 'back');
  });

  test('a daemon that refuses one connection but answers its health check stays running', async () => {
    const alive = await f.intern('alive');
    const row = (await getInternById(f.gw.ctx.store.db, alive))!;
    f.gw.ctx.interns.noticeRefused({ id: alive, hostname: row.hostname! });
    await f.gw.ctx.interns.idle();
    const after = (await f.gw.call('GET', `/interns/${alive}`)).body;
    assert.deepEqual(
      [after.status, (await getInternById(f.gw.ctx.store.db, alive))!.hostname],
      ['running', row.hostname],
    );
    assert.equal(after.hostname, hostname(), "the record names the host, not the daemon's address");
    assert.equal(text(await f.chat(alive, user('/say still'))), 'still');
  });
});
