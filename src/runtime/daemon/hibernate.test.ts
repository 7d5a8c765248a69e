// Hibernation on the daemon's side (docs/fleet.md): a sleep is granted only to an idle daemon,
// which then refuses new work; the next daemon on the same directory keeps the sessions and
// answers a late reply to an ended run's interaction as the sleeping one would have.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { daemonPaths, type RunEvent } from '../../shared/daemon-protocol.ts';
import { startFixture, type Fixture } from '../../../test/helpers/daemon-fixture.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

let f: Fixture;
before(async () => {
  f = await startFixture({ interactionDeadlineMs: 300 });
});
after(() => f.close());

const hibernate = (idle_ms: number) => f.client.json('POST', daemonPaths.hibernate, { idle_ms });
const notIdle = {
  status: 409,
  json: { error: { code: 409, message: 'the intern is not idle', metadata: { reason: 'busy', retryable: true } } },
};
const sleepingBody = {
  error: {
    code: 409,
    message: 'the intern is going to sleep',
    metadata: { reason: 'intern_not_ready', retryable: true },
  },
};

test('a sleep is refused while a run is paused (until its deadline) and before the idle time has passed, then granted; new work is refused after', async () => {
  assert.deepEqual(await hibernate(60_000), notIdle);
  assert.equal((await f.client.turn({ session_id: 'q1', prompt: 'remember cobalt' })).status, 200);
  const a = await f.client.turn({ session_id: 'q1', prompt: '/ask favourite colour?' });
  const ask = a.events.at(-1) as Extract<RunEvent, { type: 'interaction' }>;
  assert.equal(ask.type, 'interaction');
  // Paused: the question keeps the intern awake, whatever the idle time asked.
  assert.deepEqual(await hibernate(0), notIdle);
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
  assert.deepEqual(f.daemon.status().runs, []);
  assert.deepEqual(await hibernate(0), { status: 200, json: { hibernating: true } });
  // Asked again (another gateway's sweep), the answer is the same.
  assert.deepEqual(await hibernate(0), { status: 200, json: { hibernating: true } });
  const t = await f.client.turn({ session_id: 'q1', prompt: 'hello' });
  assert.deepEqual({ status: t.status, json: t.json }, { status: 409, json: sleepingBody });
  const r = await f.client.answer('q1', ask.interaction_id, '{"action":"accept","content":{"answer":"blue"}}');
  assert.deepEqual({ status: r.status, json: r.json }, { status: 409, json: sleepingBody });
  assert.ok(existsSync(join(f.dir, 'daemon', 'ended-interactions.json')));

  // The next daemon on the same directory: the session is there, and the late reply is told the
  // run ended (as before the sleep), not that the interaction is unknown.
  await f.restart();
  const late = await f.client.answer('q1', ask.interaction_id, '{"action":"accept","content":{"answer":"blue"}}');
  assert.deepEqual(
    { status: late.status, json: late.json },
    {
      status: 409,
      json: {
        error: {
          code: 409,
          message: 'the interaction is no longer waiting: its run has ended',
          metadata: { reason: 'interaction_not_pending', retryable: false },
        },
      },
    },
  );
  const other = await f.client.answer('q2', ask.interaction_id, 'cancel');
  assert.deepEqual(
    { status: other.status, json: other.json },
    {
      status: 404,
      json: {
        error: {
          code: 404,
          message: `no interaction ${ask.interaction_id} in session q2`,
          metadata: { reason: 'interaction_unknown', retryable: false },
        },
      },
    },
  );
  const c = await f.client.turn({ session_id: 'q1', prompt: 'still there?' });
  assert.equal(c.status, 200);
  const contents = (f.model.requests.at(-1) as { messages: { content: string }[] }).messages.map((m) => m.content);
  assert.deepEqual(
    [contents[0], contents[1], contents.at(-1)],
    ['remember cobalt', 'You said: remember cobalt', 'still there?'],
  );
});

test('a running turn keeps the intern awake; the idle time counts from when it ended', async () => {
  const a = await f.client.open('POST', daemonPaths.turns, {
    session_id: 'long',
    prompt: '/say started\n/sleep 60000',
  });
  assert.ok(a.events);
  await a.events.next();
  assert.deepEqual(await hibernate(0), notIdle);
  a.close();
  await waitFor('no run is left', () => f.daemon.status().runs.length === 0);
  assert.deepEqual(await hibernate(60_000), notIdle);
  assert.deepEqual(await hibernate(0), { status: 200, json: { hibernating: true } });
  await f.restart();
});

test('a malformed request is refused', async () => {
  assert.deepEqual(await f.client.json('POST', daemonPaths.hibernate, { idle_ms: -1 }), {
    status: 400,
    json: {
      error: {
        code: 400,
        message: 'body must be {"idle_ms": integer >= 0}',
        metadata: { reason: 'bad_request', retryable: false },
      },
    },
  });
});
