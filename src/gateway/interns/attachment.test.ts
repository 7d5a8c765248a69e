// The two `attachment_failed` refusals (docs/reference/intern-chat.md#statuses-and-reasons), end to end: a
// real gateway over HTTP, real daemon processes, the scripted model.
//
// - 409: a `tool` reply for a run whose continued stream is still open (the built-in agent).
// - 410: the daemon refuses a reply when events emitted AFTER the pause were already dropped from
//   the run's replay buffer (src/runtime/daemon/intern.ts answer(): `run.log.since(pending.seq)`); output
//   before the pause was already streamed and never needs replaying. The built-in agent flushes
//   every update before it asks (src/runtime/agent/turn.ts `await sent`), so a run of it never emits while
//   paused and cannot reach this refusal: a long run that then asks resumes normally (pinned below).
//   The 410 is provoked with the repository's third-party-style ACP test agent
//   (test/helpers/acp-mini-agent.ts, `chatter N`: asks, then streams N chunks while paused), run by
//   a real daemon process that takes over the intern's address, with the intern's own secret.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  assertChatStream as assertStream,
  daemonRequest,
  killGroup,
  parseSse,
  rest,
  startInternFixture,
  untilContent,
  type InternFixture,
} from '../../../test/helpers/interns.ts';
import { getInternById, secretBinding } from './interns.ts';
import { daemonPaths, type StatusResponse } from '../../shared/daemon-protocol.ts';
import { nodeArgsFor } from '../../shared/entry.ts';
import { miniAgent } from '../../../test/helpers/daemon-fixture.ts';
import { user, tool, text, callOf, finish, final } from '../../../test/helpers/chat.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

const REPLAY_BUFFER_EVENTS = 5;
const ENV = { COHORT_REPLAY_BUFFER_EVENTS: String(REPLAY_BUFFER_EVENTS), COHORT_KEEPALIVE_MS: '300' };

const answer = (a: string) => JSON.stringify({ action: 'accept', content: { answer: a } });

const ALREADY_ATTACHED = {
  error: {
    code: 409,
    message: 'another request is already attached to this run',
    metadata: { reason: 'attachment_failed', retryable: false },
  },
};
const REPLAY_LOST = {
  error: {
    code: 410,
    message: 'the run produced more output than the intern retains for replay; the paused stream cannot resume',
    metadata: { reason: 'attachment_failed', retryable: false },
  },
};

/** The intern's daemon address and secret, as the gateway holds them. */
async function daemonOf(f: InternFixture, id: string) {
  const row = (await getInternById(f.gw.ctx.store.db, id))!;
  return {
    hostname: row.hostname!,
    secret: f.gw.ctx.sealer.open(row.sealedSecret!, secretBinding.daemon(id)),
    dir: join(f.gw.dataDir, 'interns', id),
  };
}
async function daemonStatus(d: { hostname: string; secret: string }): Promise<StatusResponse> {
  const res = await daemonRequest(d.hostname, daemonPaths.status, { headers: { authorization: `Bearer ${d.secret}` } });
  assert.equal(res.status, 200);
  return JSON.parse(res.text) as StatusResponse;
}

describe('attachment_failed, end to end', () => {
  let f: InternFixture;
  let id: string;
  const own: ChildProcess[] = [];
  const dirs: string[] = [];
  before(async () => {
    f = await startInternFixture({ env: ENV });
    id = await f.intern('attached');
  });
  after(async () => {
    for (const c of own) killGroup(c.pid);
    await f.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('409 attachment_failed: a second reply while the continued stream of the run is still open', async () => {
    const paused = await f.chat(id, user('/ask What is your name?\n/sleep 1500\n/say done'));
    assertStream(paused);
    assert.deepEqual(finish(paused), ['tool_calls']);
    const call = callOf(paused);
    const sid = final(paused).session_id;
    assert.match(sid, /\S/);

    const res = await f.open(id, tool(sid, call.id, answer('Ada')));
    assert.equal(res.status, 200, 'the first reply is accepted and continues the run');
    const { reader, seen } = await untilContent(res);

    // The same interaction again while that stream is attached and the run has not ended.
    const again = await f.chat(id, tool(sid, call.id, answer('Grace')));
    assert.equal(again.status, 409);
    assert.match(again.headers.get('content-type')!, /^application\/json/);
    assert.equal(again.headers.get('retry-after'), null);
    assert.deepEqual(again.body, ALREADY_ATTACHED);

    // The refusal did not disturb the attached stream: it runs to its end with the first answer.
    const raw = await rest(reader, seen);
    const cont = { status: res.status, headers: res.headers, text: raw, ...parseSse(raw) };
    assertStream(cont);
    assert.equal(text(cont), 'ask_user: {"answer":"Ada"}\ndone');
    assert.deepEqual(finish(cont), ['stop']);
    assert.equal(final(cont).session_id, sid);
    assert.ok(final(cont).usage.total_tokens > 0);

    // Once the run has ended, the same reply is interaction_not_pending (not attachment_failed).
    const late = await f.chat(id, tool(sid, call.id, answer('Grace')));
    assert.equal(late.status, 409);
    assert.deepEqual(late.body.error.metadata, { reason: 'interaction_not_pending', retryable: false });

    // The intern keeps serving: a new turn on a new session completes.
    const next = await f.chat(id, user('/say still here'));
    assertStream(next);
    assert.equal(text(next), 'still here');
    assert.deepEqual(finish(next), ['stop']);
    assert.notEqual(final(next).session_id, sid);
  });

  test('the replay buffer counts only output after the pause: a long run that then asks resumes (built-in agent)', async () => {
    const d = await daemonOf(f, id);
    assert.equal(
      (await daemonStatus(d)).limits.replay_buffer_events,
      REPLAY_BUFFER_EVENTS,
      'the gateway passed COHORT_REPLAY_BUFFER_EVENTS to its daemon',
    );
    const paused = await f.chat(id, user('/repeat 50 x\n/ask Continue?\n/say resumed'));
    assertStream(paused);
    assert.equal(text(paused), Array(50).fill('x').join(' '));
    assert.deepEqual(finish(paused), ['tool_calls']);
    const sid = final(paused).session_id;
    const cont = await f.chat(id, tool(sid, callOf(paused).id, answer('yes')));
    assertStream(cont);
    assert.equal(text(cont), 'ask_user: {"answer":"yes"}\nresumed');
    assert.deepEqual(finish(cont), ['stop']);
    assert.equal(final(cont).session_id, sid);
  });

  test('410 attachment_failed: output while paused overflowed the replay buffer; the run is ended', async () => {
    // A second intern whose daemon is replaced by a real daemon process on the same address and
    // secret, driving the ACP test agent instead of the built-in one (see the header).
    const swapped = await f.intern('overflowing');
    const d = await daemonOf(f, swapped);
    await f.killDaemon(swapped);
    const dir = mkdtempSync(join(tmpdir(), 'cohort-attach-'));
    dirs.push(dir);
    const child = spawn(
      process.execPath,
      [...nodeArgsFor(import.meta.url, '../../runtime/daemon/main'), '--dir', dir],
      {
        detached: true,
        stdio: ['ignore', 'pipe', 'ignore'],
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          COHORT_DAEMON_SECRET: d.secret,
          COHORT_INTERN_ID: swapped,
          COHORT_DAEMON_SOCKET: d.hostname.slice('unix:'.length),
          COHORT_AGENT_COMMAND: JSON.stringify([miniAgent.command, ...miniAgent.args]),
          COHORT_REPLAY_BUFFER_EVENTS: String(REPLAY_BUFFER_EVENTS),
          LOG_LEVEL: 'warn',
        },
      },
    );
    own.push(child);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the replacement daemon exited (${code})`)));
    });
    assert.deepEqual(JSON.parse(line), { listening: d.hostname });
    assert.equal((await daemonStatus(d)).agent.name, 'mini-agent');

    const CHATTER = 20;
    const paused = await f.chat(swapped, user(`chatter ${CHATTER}`, { approval_mode: 'manual' }));
    assertStream(paused);
    assert.deepEqual(finish(paused), ['tool_calls']);
    const call = callOf(paused);
    assert.deepEqual(JSON.parse(call.function.arguments), {
      kind: 'permission',
      operation: 'deploy',
      options: ['allow_once', 'reject_once'],
      title: 'Deploy the thing',
      input: null,
      sandbox: null,
    });
    assert.equal(final(paused).usage, null);
    const sid = final(paused).session_id;

    // run, usage and interaction events, then CHATTER text events while paused: more than the buffer holds.
    await waitFor(
      'the agent chattered while paused',
      async () => ((await daemonStatus(d)).runs[0]?.last_seq ?? 0) >= 3 + CHATTER,
    );
    const lost = await f.chat(swapped, tool(sid, call.id, 'allow_once'));
    assert.equal(lost.status, 410);
    assert.match(lost.headers.get('content-type')!, /^application\/json/);
    assert.deepEqual(lost.body, REPLAY_LOST);

    // The run can never resume, so the daemon ended it; a retry finds nothing pending.
    await waitFor('the refused run ended', async () => (await daemonStatus(d)).runs.length === 0);
    const retry = await f.chat(swapped, tool(sid, call.id, 'allow_once'));
    assert.equal(retry.status, 409);
    assert.deepEqual(retry.body, {
      error: {
        code: 409,
        message: 'the interaction is no longer waiting: its run has ended',
        metadata: { reason: 'interaction_not_pending', retryable: false },
      },
    });

    // The intern keeps serving: a new turn on a new session completes.
    const next = await f.chat(swapped, user('echo hello'));
    assertStream(next);
    assert.equal(text(next), 'turn 1: hello');
    assert.deepEqual(finish(next), ['stop']);
    assert.notEqual(final(next).session_id, sid);
  });
});
