// The daemon driven over its own protocol, with the real built-in agent on the scripted model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { daemonPaths, type RunEvent } from '../../shared/daemon-protocol.ts';
import { noSandbox } from '../../../test/helpers/sandbox.ts';
import { shape } from '../../../test/helpers/daemon-client.ts';
import { startFixture, SECRET, type Fixture } from '../../../test/helpers/daemon-fixture.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

// Manual-mode shell calls need bubblewrap; where it cannot run they are refused (agent.test.ts).

let f: Fixture;
let outside: string;

before(async () => {
  f = await startFixture({ maxPausedRuns: 1, allowEscalation: true });
  outside = mkdtempSync(join(tmpdir(), 'cohort-outside-'));
});
after(async () => {
  await f.close();
  rmSync(outside, { recursive: true, force: true });
});

/** Reads a live stream until an event matches, returning everything read so far. */
async function readUntil(it: AsyncGenerator<RunEvent>, pred: (e: RunEvent) => boolean): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for (;;) {
    const n = await it.next();
    assert.ok(!n.done, 'stream ended early');
    seen.push(n.value);
    if (pred(n.value)) return seen;
  }
}

async function rest(it: AsyncGenerator<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

const runOf = (session: string) => f.daemon.status().runs.find((r) => r.session_id === session);

/** The same body whichever session holds the turn: another caller's session id is never disclosed. */
const busyBody = {
  error: {
    code: 409,
    message: 'another turn is running on this intern',
    metadata: { reason: 'busy', retryable: true },
  },
};

function interactionOf(events: RunEvent[]) {
  const e = events.at(-1);
  assert.equal(e?.type, 'interaction');
  return e as Extract<RunEvent, { type: 'interaction' }>;
}

test('auth: health is open, everything else needs the secret', async () => {
  assert.deepEqual(await f.client.json('GET', daemonPaths.health), {
    status: 200,
    json: { status: 'ok', protocol: 1 },
  });
  const res = await fetch(f.daemon.url + daemonPaths.status, { headers: { authorization: 'Bearer wrong' } });
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), { error: { code: 401, message: 'missing or wrong daemon secret' } });
  assert.equal((await f.client.json('GET', daemonPaths.status)).status, 200);
  assert.ok(SECRET);
});

test('bad bodies are refused with bad_request before anything runs', async () => {
  const r = await f.client.json('POST', daemonPaths.turns, { prompt: '' });
  assert.equal(r.status, 400);
  assert.deepEqual((r.json as { error: { metadata: unknown } }).error.metadata, {
    reason: 'bad_request',
    retryable: false,
  });
  const big = await f.client.open('POST', daemonPaths.turns, JSON.stringify({ prompt: 'x'.repeat(1_100_000) }));
  assert.equal(big.status, 413);
  assert.deepEqual(big.json, {
    error: {
      code: 413,
      message: 'request body exceeds 1 MiB',
      metadata: { reason: 'payload_too_large', retryable: false },
    },
  });
});

test('a turn streams run, model, reasoning, text, usage and completed with increasing seq', async () => {
  const r = await f.client.turn({ prompt: '/think plan it\n/say hello world' });
  assert.equal(r.status, 200);
  assert.deepEqual(shape(r.events), ['run', 'model', 'reasoning:plan it', 'text:hello world', 'usage', 'completed']);
  assert.deepEqual(
    r.events.map((e) => e.seq),
    r.events.map((_, i) => i + 1),
  );
  const run = r.events[0] as Extract<RunEvent, { type: 'run' }>;
  assert.match(run.session_id, /^sess_/);
  assert.equal(run.approval_mode, 'self-drive');
  const usage = { prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 };
  assert.deepEqual(r.events.at(-1), {
    seq: r.events.length,
    type: 'completed',
    stop_reason: 'end_turn',
    usage,
    model: 'local/scripted',
  });
  assert.deepEqual((f.model.requests.at(-1) as { model: string }).model, 'local/scripted');
});

test('the built-in agent: a model that answers nothing completes the turn, as the model routes pass an empty answer', async () => {
  const r = await f.client.turn({ prompt: '/sleep 1' });
  assert.deepEqual(shape(r.events), ['run', 'model', 'usage', 'completed']);
  assert.equal((r.events.at(-1) as { stop_reason: string }).stop_reason, 'end_turn');
});

test('sessions: later turns see the conversation, an unseen id is a new session, and it survives a restart', async () => {
  const a = await f.client.turn({ session_id: 'mine-1', prompt: 'remember cobalt' });
  assert.equal((a.events[0] as { session_id: string }).session_id, 'mine-1');
  assert.deepEqual(shape(a.events), ['run', 'model', 'text:You said: remember cobalt', 'usage', 'completed']);
  await f.client.turn({ session_id: 'mine-1', prompt: 'what was it?' });
  const contents = () =>
    (f.model.requests.at(-1) as { messages: { content: string }[] }).messages.map((m) => m.content);
  assert.deepEqual(contents(), ['remember cobalt', 'You said: remember cobalt', 'what was it?']);
  await f.restart();
  const c = await f.client.turn({ session_id: 'mine-1', prompt: 'still there?' });
  assert.equal(c.status, 200);
  assert.deepEqual(contents(), [
    'remember cobalt',
    'You said: remember cobalt',
    'what was it?',
    'You said: what was it?',
    'still there?',
  ]);
  await f.client.turn({ session_id: 'mine-2', prompt: 'fresh' });
  assert.deepEqual(contents(), ['fresh']);
});

test('one turn per intern: other sessions and no session get busy; cancel ends the run, confirmed', async () => {
  const a = await f.client.open('POST', daemonPaths.turns, {
    session_id: 'long',
    prompt: '/say started\n/sleep 60000\n/say never',
  });
  assert.ok(a.events);
  const head = await readUntil(a.events, (e) => e.type === 'text');
  const runId = (head[0] as { run_id: string }).run_id;
  for (const body of [{ prompt: 'hi' }, { session_id: 'other', prompt: 'hi' }]) {
    const b = await f.client.turn(body);
    assert.equal(b.status, 409);
    assert.deepEqual(b.json, busyBody);
    assert.equal(b.headers.get('retry-after'), '1');
  }
  // A reply is busy while another turn runs, before the interaction it names is looked up.
  for (const session of ['long', 'nowhere'])
    assert.deepEqual((await f.client.answer(session, 'call_nope', 'allow_once')).json, busyBody);
  assert.deepEqual(await f.client.json('POST', daemonPaths.cancelRun(runId)), {
    status: 200,
    json: { run_id: runId, session_id: 'long', phase: 'ended' },
  });
  const tail = await rest(a.events);
  assert.deepEqual(tail.at(-1), {
    seq: tail.at(-1)!.seq,
    type: 'ended',
    cause: 'cancelled',
    message: 'the run was cancelled',
    usage: null,
  });
  assert.equal((await f.client.turn({ prompt: 'free again' })).status, 200);
});

test('a client disconnecting from a running turn cancels it; the ending is confirmed in the log', async () => {
  const a = await f.client.open('POST', daemonPaths.turns, { prompt: '/say started\n/sleep 60000' });
  assert.ok(a.events);
  const head = await readUntil(a.events, (e) => e.type === 'text');
  const runId = (head[0] as { run_id: string }).run_id;
  a.close();
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
  const replay = await f.client.collect('GET', daemonPaths.events(runId));
  assert.deepEqual(shape(replay.events), ['run', 'model', 'text:started', 'ended']);
  assert.equal((replay.events.at(-1) as { cause: string }).cause, 'cancelled');
  assert.equal(f.daemon.status().turn, null);
});

test('a stopping daemon cancels its running turn and confirms the ending (ended, not a severed stream)', async () => {
  const a = await f.client.open('POST', daemonPaths.turns, { prompt: '/say started\n/sleep 60000\n/say never' });
  assert.ok(a.events);
  await readUntil(a.events, (e) => e.type === 'text');
  await f.restart();
  const tail = await rest(a.events);
  assert.deepEqual(shape(tail), ['ended']);
  assert.deepEqual(tail[0], {
    seq: tail[0]!.seq,
    type: 'ended',
    cause: 'cancelled',
    message: 'the intern is stopping; the run was cancelled',
    usage: null,
  });
});

test('steering: a message for the running session is delivered into the turn (202) and answered there', async () => {
  const gate = join(f.dir, 'work', 'go');
  const a = await f.client.open('POST', daemonPaths.turns, {
    session_id: 'steer-1',
    prompt: '/say waiting\n/shell while [ ! -e go ]; do sleep 0.01; done; echo gate\n/say after',
  });
  assert.ok(a.events);
  const head = await readUntil(a.events, (e) => e.type === 'usage');
  const s = await f.client.json('POST', daemonPaths.turns, { session_id: 'steer-1', prompt: 'also do X' });
  assert.deepEqual(s, { status: 202, json: { session_id: 'steer-1', status: 'steered' } });
  writeFileSync(gate, '');
  const events = [...head, ...(await rest(a.events))];
  rmSync(gate);
  assert.deepEqual(shape(events), [
    'run',
    'model',
    'text:waiting',
    'usage',
    'tool:in_progress',
    'steered',
    'tool:completed',
    'text:Noted: also do X\nshell: gate\n[exit 0]\nafter',
    'usage',
    'completed',
  ]);
});

test('manual: permission pauses the run, which frees the lock; the shell is sandboxed; answers resume the stream', {
  skip: noSandbox,
}, async () => {
  const cmd = `echo boxed > ${outside}/boxed.txt; echo in > in.txt; echo ran`;
  const a = await f.client.turn({ session_id: 'm1', approval_mode: 'manual', prompt: `/shell ${cmd}` });
  assert.deepEqual(shape(a.events), ['run', 'model', 'usage', 'tool:in_progress', 'interaction']);
  const ask = interactionOf(a.events);
  assert.deepEqual(ask.interaction, {
    kind: 'permission',
    operation: 'shell',
    options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
    title: `Run in the sandbox: ${cmd}`,
    input: { command: cmd, escalate: false },
    sandbox: 'inner',
  });
  assert.equal(runOf('m1')?.phase, 'paused');

  // While it waits, another session runs a whole turn.
  assert.deepEqual(shape((await f.client.turn({ session_id: 'm2', prompt: 'meanwhile' })).events), [
    'run',
    'model',
    'text:You said: meanwhile',
    'usage',
    'completed',
  ]);

  const r = await f.client.answer('m1', ask.interaction_id, 'allow_once');
  assert.equal(r.status, 200);
  assert.equal(r.events[0]!.seq, ask.seq + 1);
  const [first, done, said = '', ...rest] = shape(r.events);
  assert.equal(first, 'model');
  assert.equal(done, 'tool:completed');
  assert.deepEqual(rest, ['usage', 'completed']);
  assert.match(said, /^text:shell: /);
  assert.match(said, /ran\n\[exit 0\]$/);
  assert.equal(existsSync(join(f.dir, 'work', 'in.txt')), true);
  assert.equal(existsSync(join(outside, 'boxed.txt')), false);

  const again = await f.client.answer('m1', ask.interaction_id, 'allow_once');
  assert.deepEqual(again.json, {
    error: {
      code: 409,
      message: 'the interaction is no longer waiting: its run has ended',
      metadata: { reason: 'interaction_not_pending', retryable: false },
    },
  });
});

test('manual: an allowed escalation runs outside the sandbox; self-drive runs unsandboxed without asking', {
  skip: noSandbox,
}, async () => {
  const esc = await f.client.turn({
    approval_mode: 'manual',
    prompt: `/tool shell {"command": "echo esc > ${outside}/esc.txt", "escalate": true}`,
  });
  const ask = interactionOf(esc.events);
  const sid = (esc.events[0] as { session_id: string }).session_id;
  assert.equal((await f.client.answer(sid, ask.interaction_id, 'allow_once')).status, 200);
  assert.equal(existsSync(join(outside, 'esc.txt')), true);

  const free = await f.client.turn({ prompt: `/shell echo free > ${outside}/free.txt` });
  assert.deepEqual(shape(free.events), [
    'run',
    'model',
    'usage',
    'tool:in_progress',
    'tool:completed',
    'text:shell: [exit 0]',
    'usage',
    'completed',
  ]);
  assert.equal(existsSync(join(outside, 'free.txt')), true);
});

test('manual: where the operator does not allow escalation, it is refused without asking and nothing runs outside', {
  skip: noSandbox,
}, async () => {
  const strict = await startFixture({});
  try {
    const esc = await strict.client.turn({
      approval_mode: 'manual',
      prompt: `/tool shell {"command": "echo esc > ${outside}/refused.txt", "escalate": true}`,
    });
    assert.deepEqual(shape(esc.events), [
      'run',
      'model',
      'usage',
      'tool:in_progress',
      'tool:completed',
      "text:shell: Refused: this installation does not allow running commands outside the sandbox (the operator's COHORT_ALLOW_ESCALATION is off). Run it inside the sandbox instead (escalate: false).",
      'usage',
      'completed',
    ]);
    assert.equal(existsSync(join(outside, 'refused.txt')), false);
  } finally {
    await strict.close();
  }
});

test('manual: allow_always and reject_always hold for the rest of the run; an allowed escalation unsandboxes it', {
  skip: noSandbox,
}, async () => {
  const a = await f.client.turn({
    session_id: 'aa',
    approval_mode: 'manual',
    prompt: '/shell echo one\n/shell echo two',
  });
  const r = await f.client.answer('aa', interactionOf(a.events).interaction_id, 'allow_always');
  assert.deepEqual(shape(r.events), [
    'model',
    'tool:completed',
    'text:shell: one\n[exit 0]',
    'usage',
    'tool:in_progress',
    'tool:completed',
    'text:shell: two\n[exit 0]',
    'usage',
    'completed',
  ]);

  const b = await f.client.turn({
    session_id: 'rr',
    approval_mode: 'manual',
    prompt: '/shell echo one\n/shell echo two',
  });
  const rr = await f.client.answer('rr', interactionOf(b.events).interaction_id, 'reject_always');
  assert.deepEqual(shape(rr.events), [
    'model',
    'tool:completed',
    'text:shell: The user rejected this command.',
    'usage',
    'tool:in_progress',
    'tool:completed',
    'text:shell: The user rejected this command.',
    'usage',
    'completed',
  ]);

  // The mode belongs to the run: the next manual run on the same session asks again.
  const c = await f.client.turn({
    session_id: 'aa',
    approval_mode: 'manual',
    prompt: `/tool shell {"command": "echo x", "escalate": true}\n/shell echo y > ${outside}/after-esc.txt`,
  });
  const cc = await f.client.answer('aa', interactionOf(c.events).interaction_id, 'allow_always');
  assert.equal(cc.events.at(-1)?.type, 'completed');
  assert.equal(existsSync(join(outside, 'after-esc.txt')), true);
});

test('answers: unknown → 404, not offered → 400 (deadline unchanged), reject → stream continues', {
  skip: noSandbox,
}, async () => {
  const a = await f.client.turn({ session_id: 'r1', approval_mode: 'manual', prompt: '/shell echo hi' });
  const ask = interactionOf(a.events);
  const deadline = runOf('r1')?.deadline_at;
  assert.equal(deadline, ask.deadline_at);

  const unknown = await f.client.answer('r1', 'call_nope', 'allow_once');
  assert.deepEqual(unknown.json, {
    error: {
      code: 404,
      message: 'no interaction call_nope in session r1',
      metadata: { reason: 'interaction_unknown', retryable: false },
    },
  });
  assert.equal((await f.client.answer('other-session', ask.interaction_id, 'allow_once')).status, 404);
  const bad = await f.client.answer('r1', ask.interaction_id, 'maybe');
  assert.deepEqual(bad.json, {
    error: {
      code: 400,
      message: 'answer must be one of allow_once, allow_always, reject_once, reject_always, cancel',
      metadata: { reason: 'bad_request', retryable: false },
    },
  });
  assert.equal(runOf('r1')?.deadline_at, deadline);

  const r = await f.client.answer('r1', ask.interaction_id, 'reject_once');
  assert.deepEqual(shape(r.events), [
    'model',
    'tool:completed',
    'text:shell: The user rejected this command.',
    'usage',
    'completed',
  ]);
});

test('one attachment per run: a reply while another request is attached gets 409 attachment_failed', {
  skip: noSandbox,
}, async () => {
  const a = await f.client.turn({ session_id: 'att', approval_mode: 'manual', prompt: '/shell echo hi' });
  const ask = interactionOf(a.events);
  const runId = (a.events[0] as { run_id: string }).run_id;
  const watcher = await f.client.open('GET', daemonPaths.events(runId, ask.seq));
  assert.equal(watcher.status, 200);
  await waitFor('a client is attached to the run', () => runOf('att')?.attached === true);
  const r = await f.client.answer('att', ask.interaction_id, 'allow_once');
  assert.deepEqual(r.json, {
    error: {
      code: 409,
      message: 'another request is already attached to this run',
      metadata: { reason: 'attachment_failed', retryable: false },
    },
  });
  assert.equal((await f.client.collect('GET', daemonPaths.events(runId, ask.seq))).status, 409);
  watcher.close();
  await waitFor('no client is attached to the run', () => runOf('att')?.attached === false);
  assert.equal(runOf('att')?.phase, 'paused');
  assert.deepEqual(shape((await f.client.answer('att', ask.interaction_id, 'allow_once')).events), [
    'model',
    'tool:completed',
    'text:shell: hi\n[exit 0]',
    'usage',
    'completed',
  ]);
});

test('questions: typed fields, malformed answers rejected, an accepted answer resumes the turn', async () => {
  const a = await f.client.turn({ session_id: 'q1', prompt: '/ask favourite colour?\n/say thanks' });
  const ask = interactionOf(a.events);
  assert.deepEqual(ask.interaction, {
    kind: 'elicitation',
    message: 'favourite colour?',
    fields: [{ name: 'answer', type: 'string', required: true, options: [] }],
  });
  const msg = async (answer: string) =>
    ((await f.client.answer('q1', ask.interaction_id, answer)).json as { error: { message: string } }).error.message;
  assert.equal(
    await msg('blue'),
    'answer must be a JSON object string {"action": "accept"|"decline"|"cancel", "content": {...}}',
  );
  assert.equal(await msg('{"action":"accept","content":{}}'), 'field answer is required');
  assert.equal(await msg('{"action":"accept","content":{"answer":3}}'), 'field answer must be string');
  const r = await f.client.answer('q1', ask.interaction_id, '{"action":"accept","content":{"answer":"blue"}}');
  assert.deepEqual(shape(r.events), [
    'model',
    'tool:completed',
    'text:ask_user: {"answer":"blue"}\nthanks',
    'usage',
    'completed',
  ]);
});

test('a permission answered "cancel" ends the run, confirmed', { skip: noSandbox }, async () => {
  const a = await f.client.turn({ session_id: 'c1', approval_mode: 'manual', prompt: '/shell echo hi' });
  const r = await f.client.answer('c1', interactionOf(a.events).interaction_id, 'cancel');
  assert.deepEqual(shape(r.events), ['ended']);
  assert.equal((r.events[0] as { cause: string }).cause, 'cancelled');
});

test('a new prompt on a session with a paused run supersedes it', { skip: noSandbox }, async () => {
  const a = await f.client.turn({ session_id: 's1', approval_mode: 'manual', prompt: '/shell echo hi' });
  const ask = interactionOf(a.events);
  assert.deepEqual(shape((await f.client.turn({ session_id: 's1', prompt: 'never mind' })).events), [
    'run',
    'model',
    'text:You said: never mind',
    'usage',
    'completed',
  ]);
  assert.equal((await f.client.answer('s1', ask.interaction_id, 'allow_once')).status, 409);
});

test('a prompt for a paused session while another turn runs is refused busy and leaves the paused run alone', {
  skip: noSandbox,
}, async () => {
  const a = await f.client.turn({ session_id: 'keep', approval_mode: 'manual', prompt: '/shell echo kept' });
  const ask = interactionOf(a.events);
  const b = await f.client.open('POST', daemonPaths.turns, { session_id: 'runner', prompt: '/say go\n/sleep 60000' });
  assert.ok(b.events);
  await readUntil(b.events, (e) => e.type === 'text');
  const c = await f.client.turn({ session_id: 'keep', prompt: 'new topic' });
  assert.deepEqual(c.json, busyBody);
  assert.equal(runOf('keep')?.phase, 'paused');
  assert.equal((await f.client.json('POST', daemonPaths.cancelSession('runner'))).status, 200);
  await rest(b.events);
  assert.deepEqual(shape((await f.client.answer('keep', ask.interaction_id, 'allow_once')).events), [
    'model',
    'tool:completed',
    'text:shell: kept\n[exit 0]',
    'usage',
    'completed',
  ]);
});

test('the agent dying while a run is paused fails that run; the session lives on in a fresh agent', {
  skip: noSandbox,
}, async () => {
  await f.client.turn({ session_id: 'phoenix', prompt: 'remember ember' });
  const a = await f.client.turn({ session_id: 'phoenix', approval_mode: 'manual', prompt: '/shell echo hi' });
  const ask = interactionOf(a.events);
  const runId = (a.events[0] as { run_id: string }).run_id;
  process.kill(f.daemon.status().agent.pid!, 'SIGKILL');
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
  const replay = await f.client.collect('GET', daemonPaths.events(runId, ask.seq));
  assert.deepEqual(shape(replay.events), ['failed']);
  assert.equal((replay.events[0] as { reason: string }).reason, 'stream_severed');
  assert.equal((await f.client.answer('phoenix', ask.interaction_id, 'allow_once')).status, 409);
  const next = await f.client.turn({ session_id: 'phoenix', prompt: 'and now?' });
  assert.equal(next.events.at(-1)?.type, 'completed');
  const contents = (f.model.requests.at(-1) as { messages: { content: string }[] }).messages.map((m) => m.content);
  assert.deepEqual(contents, ['remember ember', 'You said: remember ember', 'and now?']);
});

test('paused-run capacity: a pause past the limit fails the run with 503 busy', async () => {
  const a = await f.client.turn({ session_id: 'cap-1', prompt: '/ask one?' });
  interactionOf(a.events);
  const b = await f.client.turn({ session_id: 'cap-2', prompt: '/ask two?' });
  assert.deepEqual(shape(b.events), ['run', 'model', 'usage', 'tool:in_progress', 'tool:completed', 'failed']);
  assert.deepEqual(b.events.at(-1), {
    seq: 6,
    type: 'failed',
    reason: 'busy',
    status: 503,
    retryable: true,
    retry_after_seconds: 1,
    message: 'the intern cannot hold another run open across a question (1 already paused)',
    before_output: true,
    usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
  });
  const c = await f.client.json('POST', daemonPaths.cancelSession('cap-1'));
  assert.equal((c.json as { phase: string }).phase, 'ended');
  assert.equal((await f.client.json('POST', daemonPaths.cancelSession('cap-1'))).status, 404);
});

test("a model failure fails the turn with the agent's own retryable classification", async () => {
  const r429 = await f.client.turn({ prompt: '/fail 429' });
  assert.deepEqual(r429.events.at(-1), {
    seq: 2,
    type: 'failed',
    reason: 'turn_failed',
    status: 502,
    message: 'model endpoint answered 429: scripted failure 429',
    retryable: true,
    before_output: true,
    usage: null,
  });
  const r401 = await f.client.turn({ prompt: '/fail 401' });
  assert.equal((r401.events.at(-1) as { retryable: boolean }).retryable, false);
});
