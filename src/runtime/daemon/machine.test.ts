// One test per row of the run table (docs/reference/intern-chat.md#run-states), plus the daemon's own rows
// (attachments, capacity).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialRunState, step, type RunState } from './machine.ts';

const running: RunState = initialRunState;
const paused: RunState = { phase: 'paused', attached: false, holdsLock: false, cause: null };
const answer = { kind: 'answer', valid: true, replayOk: true } as const;

test('running + permission/question → paused: one interaction, stream ends, lock freed, deadline starts', () => {
  assert.deepEqual(step(running, { kind: 'pause', pausedRuns: 0, maxPausedRuns: 2 }), {
    state: paused,
    effects: ['emit_interaction', 'end_stream', 'release_lock', 'start_deadline'],
    refusal: null,
  });
});

test('running + intern completes → completed', () => {
  assert.deepEqual(step(running, { kind: 'complete' }), {
    state: { phase: 'completed', attached: false, holdsLock: false, cause: null },
    effects: ['emit_completed', 'end_stream', 'release_lock', 'clear_deadline'],
    refusal: null,
  });
});

test('running + failure → failed', () => {
  assert.deepEqual(step(running, { kind: 'fail' }), {
    state: { phase: 'failed', attached: false, holdsLock: false, cause: null },
    effects: ['emit_failed', 'end_stream', 'release_lock', 'clear_deadline'],
    refusal: null,
  });
});

test('running + client disconnects → cancelling, then the confirmation ends it', () => {
  const a = step(running, { kind: 'detach' });
  assert.deepEqual(a, {
    state: { phase: 'cancelling', attached: false, holdsLock: true, cause: 'client_closed' },
    effects: ['cancel_agent'],
    refusal: null,
  });
  assert.deepEqual(step(a.state, { kind: 'confirmed' }), {
    state: { phase: 'ended', attached: false, holdsLock: false, cause: 'client_closed' },
    effects: ['emit_ended', 'end_stream', 'release_lock', 'clear_deadline'],
    refusal: null,
  });
});

test('running + cancellation while the client is connected → ended, confirmed (run_ended)', () => {
  const a = step(running, { kind: 'cancel' });
  assert.deepEqual(a.state, { phase: 'cancelling', attached: true, holdsLock: true, cause: 'cancelled' });
  assert.deepEqual(a.effects, ['clear_deadline', 'cancel_agent']);
  const b = step(a.state, { kind: 'confirmed' });
  assert.equal(b.state.phase, 'ended');
  assert.deepEqual(b.effects, ['emit_ended', 'end_stream', 'release_lock', 'clear_deadline']);
});

test('running + agent connection breaks (not confirmed) → failed', () => {
  assert.equal(step({ ...running, phase: 'cancelling', cause: 'cancelled' }, { kind: 'fail' }).state.phase, 'failed');
});

test('paused + client closes after [DONE] → stays paused', () => {
  assert.deepEqual(step(paused, { kind: 'detach' }), { state: paused, effects: [], refusal: null });
});

test('paused + accepted reply → running, lock taken, answer delivered, stream continues', () => {
  assert.deepEqual(step(paused, answer), {
    state: { phase: 'running', attached: true, holdsLock: true, cause: null },
    effects: ['take_lock', 'clear_deadline', 'deliver_answer', 'attach'],
    refusal: null,
  });
});

test('paused + rejected reply → paused, deadline not touched', () => {
  assert.deepEqual(step(paused, { ...answer, valid: false }), {
    state: paused,
    effects: [],
    refusal: 'answer_rejected',
  });
});

test('the daemon stops: a running or paused run is cancelled for shutdown, and the confirmation ends it', () => {
  for (const s of [running, paused]) {
    const a = step(s, { kind: 'cancel', cause: 'shutdown' });
    assert.deepEqual(a, {
      state: { ...s, phase: 'cancelling', cause: 'shutdown' },
      effects: ['clear_deadline', 'cancel_agent'],
      refusal: null,
    });
    assert.deepEqual(step(a.state, { kind: 'confirmed' }).state, {
      phase: 'ended',
      attached: false,
      holdsLock: false,
      cause: 'shutdown',
    });
  }
  const closing = { ...running, phase: 'cancelling', attached: false, cause: 'client_closed' } as const;
  assert.deepEqual(step(closing, { kind: 'cancel', cause: 'shutdown' }), {
    state: closing,
    effects: [],
    refusal: null,
  });
});

test('paused + deadline passes → cancelling, then ended', () => {
  const a = step(paused, { kind: 'deadline' });
  assert.deepEqual(a, {
    state: { ...paused, phase: 'cancelling', cause: 'deadline' },
    effects: ['cancel_agent'],
    refusal: null,
  });
  assert.deepEqual(step(a.state, { kind: 'confirmed' }).state, {
    phase: 'ended',
    attached: false,
    holdsLock: false,
    cause: 'deadline',
  });
});

test('running + user message on the same session → steered, still running', () => {
  assert.deepEqual(step(running, { kind: 'steer' }), { state: running, effects: ['deliver_steer'], refusal: null });
  assert.equal(step(paused, { kind: 'steer' }).refusal, 'busy');
});

test('a second attachment is refused; a reply to a run someone is attached to is refused', () => {
  assert.equal(step(running, { kind: 'attach', replayOk: true }).refusal, 'already_attached');
  assert.equal(step({ ...paused, attached: true }, answer).refusal, 'already_attached');
  assert.equal(step(running, answer).refusal, 'already_attached');
});

test('replay dropped: attach → 410, reply → 410 and the unresumable run is cancelled', () => {
  assert.equal(step({ ...paused }, { kind: 'attach', replayOk: false }).refusal, 'replay_lost');
  const r = step(paused, { ...answer, replayOk: false });
  assert.equal(r.refusal, 'replay_lost');
  assert.deepEqual(r.effects, ['clear_deadline', 'cancel_agent']);
  assert.equal(r.state.phase, 'cancelling');
});

test('pause past the paused-run capacity → cancelled, then failed busy (503)', () => {
  const a = step(running, { kind: 'pause', pausedRuns: 2, maxPausedRuns: 2 });
  assert.deepEqual(a, {
    state: { ...running, phase: 'cancelling', cause: 'capacity' },
    effects: ['deny_interaction', 'cancel_agent'],
    refusal: null,
  });
  const b = step(a.state, { kind: 'confirmed' });
  assert.equal(b.state.phase, 'failed');
  assert.deepEqual(b.effects, ['emit_capacity_failure', 'end_stream', 'release_lock', 'clear_deadline']);
});

test('ended runs: reply → interaction_not_pending; a replay attach still works', () => {
  const ended: RunState = { phase: 'ended', attached: false, holdsLock: false, cause: 'deadline' };
  assert.equal(step(ended, answer).refusal, 'interaction_not_pending');
  assert.deepEqual(step(ended, { kind: 'attach', replayOk: true }).effects, ['attach']);
  assert.deepEqual(step(ended, { kind: 'cancel' }), { state: ended, effects: [], refusal: null });
});
