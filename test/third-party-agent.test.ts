// Any ACP agent behind the daemon: the minimal third-party-style agent (no modes, no steering, no
// session/load), plus what only it can provoke: replay overflow, a crash mid-turn, deadlines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { daemonPaths, type RunEvent } from '../src/shared/daemon-protocol.ts';
import { shape } from './helpers/daemon-client.ts';
import { miniAgent, SECRET, startFixture, type Fixture } from './helpers/daemon-fixture.ts';
import { waitFor } from './helpers/wait.ts';

let f: Fixture;

before(async () => {
  f = await startFixture({ agent: miniAgent, replayBufferEvents: 8 });
});
after(() => f.close());

function interactionOf(events: RunEvent[]) {
  const e = events.at(-1);
  assert.equal(e?.type, 'interaction');
  return e as Extract<RunEvent, { type: 'interaction' }>;
}

const sessionOf = (events: RunEvent[]) => (events[0] as { session_id: string }).session_id;

test('a third-party agent runs turns; its usage and cost are reported as it reports them', async () => {
  const r = await f.client.turn({ session_id: 'tp', prompt: 'echo hi there' });
  assert.deepEqual(shape(r.events), ['run', 'usage', 'text:turn 1: hi there', 'completed']);
  assert.deepEqual(r.events.at(-1), {
    seq: 4,
    type: 'completed',
    stop_reason: 'end_turn',
    usage: { prompt_tokens: 42, completion_tokens: 0, total_tokens: 42, cost: 0.25 },
    model: null,
  });
  assert.deepEqual(
    shape((await f.client.turn({ session_id: 'tp', prompt: 'echo again' })).events)[2],
    'text:turn 2: again',
  );
  assert.equal(f.daemon.status().agent.name, 'mini-agent');
});

test('updates are handled in the order the agent sent them, even when it does not await them', async () => {
  const r = await f.client.turn({ prompt: 'count 300' });
  const expected = Array.from({ length: 300 }, (_, i) => `${i} `).join('');
  assert.deepEqual(shape(r.events), ['run', 'usage', `text:${expected}`, 'completed']);
});

test('an idle stream gets keepalive comments', async () => {
  const k = await startFixture({ agent: miniAgent, keepaliveMs: 20 });
  try {
    const a = await k.client.turn({ approval_mode: 'manual', prompt: 'permission' });
    const runId = (a.events[0] as { run_id: string }).run_id;
    const res = await fetch(k.daemon.url + daemonPaths.events(runId, a.events.at(-1)!.seq), {
      headers: { authorization: `Bearer ${SECRET}` },
    });
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    assert.match(new TextDecoder().decode(value), /^(: keepalive\n\n)+$/);
    await reader.cancel();
  } finally {
    await k.close();
  }
});

test('self-drive consents for the caller; manual pauses and accepts only the offered options', async () => {
  assert.deepEqual(shape((await f.client.turn({ prompt: 'permission' })).events), [
    'run',
    'usage',
    'text:chose yes',
    'completed',
  ]);
  const a = await f.client.turn({ approval_mode: 'manual', prompt: 'permission' });
  const ask = interactionOf(a.events);
  assert.deepEqual(ask.interaction, {
    kind: 'permission',
    operation: 'deploy',
    options: ['allow_once', 'reject_once'],
    title: 'Deploy the thing',
    input: null,
    sandbox: null,
  });
  assert.equal((await f.client.answer(sessionOf(a.events), ask.interaction_id, 'allow_always')).status, 400);
  assert.deepEqual(shape((await f.client.answer(sessionOf(a.events), ask.interaction_id, 'reject_once')).events), [
    'text:chose no',
    'completed',
  ]);
});

test('replay overflow: output past the buffer while paused makes the resume fail 410, and ends the run', async () => {
  const a = await f.client.turn({ approval_mode: 'manual', prompt: 'chatter 20' });
  const ask = interactionOf(a.events);
  const runId = (a.events[0] as { run_id: string }).run_id;
  await waitFor(
    'the run went 20 events past the question',
    () => (f.daemon.status().runs[0]?.last_seq ?? 0) >= ask.seq + 20,
  );
  const lost = {
    error: {
      code: 410,
      message: 'the run produced more output than the intern retains for replay; the paused stream cannot resume',
      metadata: { reason: 'attachment_failed', retryable: false },
    },
  };
  assert.deepEqual((await f.client.collect('GET', daemonPaths.events(runId, ask.seq))).json, lost);
  assert.deepEqual((await f.client.answer(sessionOf(a.events), ask.interaction_id, 'allow_once')).json, lost);
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
  assert.equal((await f.client.answer(sessionOf(a.events), ask.interaction_id, 'allow_once')).status, 409);
});

test('interaction deadline: the paused run is cancelled and the ending confirmed; later answers are not pending', async () => {
  const d = await startFixture({ agent: miniAgent, interactionDeadlineMs: 200 });
  try {
    const a = await d.client.turn({ approval_mode: 'manual', prompt: 'permission' });
    const ask = interactionOf(a.events);
    const runId = (a.events[0] as { run_id: string }).run_id;
    await waitFor('the paused run was cancelled', () => d.daemon.status().runs.length === 0);
    const replay = await d.client.collect('GET', daemonPaths.events(runId, ask.seq));
    assert.deepEqual(replay.events, [
      {
        seq: ask.seq + 1,
        type: 'ended',
        cause: 'deadline',
        message: 'the interaction deadline passed; the run was cancelled',
        usage: { prompt_tokens: 42, completion_tokens: 0, total_tokens: 42, cost: 0.25 },
      },
    ]);
    const late = await d.client.answer(sessionOf(a.events), ask.interaction_id, 'allow_once');
    assert.deepEqual(late.json, {
      error: {
        code: 409,
        message: 'the interaction is no longer waiting: its run has ended',
        metadata: { reason: 'interaction_not_pending', retryable: false },
      },
    });
  } finally {
    await d.close();
  }
});

test('steering an agent without the extension is refused busy', async () => {
  const a = await f.client.open('POST', daemonPaths.turns, { session_id: 'hang', prompt: 'hang' });
  assert.ok(a.events);
  await a.events.next();
  const s = await f.client.json('POST', daemonPaths.turns, { session_id: 'hang', prompt: 'hello?' });
  assert.equal(s.status, 409);
  assert.deepEqual((s.json as { error: { metadata: unknown } }).error.metadata, { reason: 'busy', retryable: true });
  a.close();
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
});

test('an agent that ignores a cancel is restarted after the grace: the run ends, the intern is free again', async () => {
  const d = await startFixture({ agent: miniAgent, cancelGraceMs: 300 });
  try {
    const a = await d.client.open('POST', daemonPaths.turns, { session_id: 'deaf', prompt: 'deaf' });
    assert.ok(a.events);
    const first = await a.events.next();
    const runId = (first.value as { run_id: string }).run_id;
    const pid = d.daemon.status().agent.pid;
    a.close();
    await waitFor('no run is left', () => d.daemon.status().runs.length === 0);
    const replay = await d.client.collect('GET', daemonPaths.events(runId, 0));
    assert.deepEqual(shape(replay.events), ['run', 'usage', 'failed']);
    assert.deepEqual(replay.events.at(-1), {
      seq: 3,
      type: 'failed',
      reason: 'stream_severed',
      status: 502,
      message: 'the agent did not confirm the cancel within 300 ms and was restarted',
      retryable: true,
      before_output: true,
      usage: { prompt_tokens: 42, completion_tokens: 0, total_tokens: 42, cost: 0.25 },
    });
    const next = await d.client.turn({ session_id: 'deaf', prompt: 'echo awake' });
    assert.deepEqual(shape(next.events), ['run', 'usage', 'text:turn 1: awake', 'completed']);
    assert.notEqual(d.daemon.status().agent.pid, pid);
  } finally {
    await d.close();
  }
});

test('a turn with nothing to show and no model tokens fails turn_failed in the stream, in the agent’s words where it sent some, else saying why', async () => {
  const failed = (seq: number, message: string) => ({
    seq,
    type: 'failed',
    reason: 'turn_failed',
    status: 502,
    message,
    retryable: false,
    // It ran to its end: the gateway reports it in the stream, with the session it belongs to.
    before_output: false,
    usage: null,
  });
  const unheard = await f.client.turn({ session_id: 'empty', prompt: 'unheard' });
  assert.deepEqual(shape(unheard.events), ['run', 'failed']);
  assert.deepEqual(
    unheard.events.at(-1),
    failed(2, 'the agent ended the turn without an answer (no text, tool call or question)'),
  );
  assert.deepEqual(
    (await f.client.turn({ session_id: 'empty', prompt: 'refuse' })).events.at(-1),
    failed(2, 'the agent refused the message, with no answer'),
  );
  // A command it does not have: the commands it offered when the session started are named.
  assert.deepEqual(
    (await f.client.turn({ session_id: 'empty', prompt: '/tidy up' })).events.at(-1),
    failed(
      2,
      'the message began with "/", so the agent took it as a command of its own, /tidy, which it does not have (it offers /local); nothing reached the model: to send the message to the model instead, begin it with a space',
    ),
  );
  // Its command's output, in Claude Code's markup cut across chunks, is its own words for the error.
  const local = await f.client.turn({ session_id: 'empty', prompt: '/local Unknown skill: tidy' });
  assert.deepEqual(shape(local.events), ['run', 'failed']);
  assert.deepEqual(
    local.events.at(-1),
    failed(
      2,
      'the agent ran the message as its command /local: Unknown skill: tidy; to send the message to the model instead, begin it with a space',
    ),
  );
  // A model's empty answer (tokens reported) is the model's to give: the turn completes.
  assert.deepEqual(shape((await f.client.turn({ session_id: 'empty', prompt: 'silent' })).events), [
    'run',
    'usage',
    'completed',
  ]);
  // The session goes on; text around a marked block is kept.
  assert.deepEqual(shape((await f.client.turn({ session_id: 'empty', prompt: 'echo <b>x</b>' })).events), [
    'run',
    'usage',
    'text:turn 6: <b>x</b>',
    'completed',
  ]);
});

test('an agent failing a turn: turn_failed with its classification', async () => {
  const r = await f.client.turn({ prompt: 'fail' });
  assert.deepEqual(r.events.at(-1), {
    seq: 3,
    type: 'failed',
    reason: 'turn_failed',
    status: 502,
    message: 'mini agent failure',
    retryable: false,
    before_output: true,
    usage: { prompt_tokens: 42, completion_tokens: 0, total_tokens: 42, cost: 0.25 },
  });
});

test('an agent crashing mid-turn fails the run (never a hung stream); the next turn gets a fresh agent', async () => {
  const r = await f.client.turn({ session_id: 'crashy', prompt: 'crash' });
  assert.deepEqual(shape(r.events), ['run', 'usage', 'text:about to crash', 'failed']);
  const failed = r.events.at(-1) as Extract<RunEvent, { type: 'failed' }>;
  assert.deepEqual(
    { reason: failed.reason, status: failed.status, retryable: failed.retryable, before_output: failed.before_output },
    { reason: 'stream_severed', status: 502, retryable: true, before_output: false },
  );
  assert.match(failed.message, /^the agent's connection broke before the turn finished: /);
  const next = await f.client.turn({ session_id: 'crashy', prompt: 'echo back' });
  assert.deepEqual(shape(next.events), ['run', 'usage', 'text:turn 1: back', 'completed']);
  assert.equal(existsSync(join(f.dir, 'daemon', 'sessions.json')), true);
});
