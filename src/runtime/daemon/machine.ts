// The run state machine (docs/reference/intern-chat.md#run-states), pure: (state, trigger) → next state,
// effects to perform, and the refusal to answer with when the trigger is a request the run cannot take.
import type { RefusalKind, RunPhase } from '../../shared/daemon-protocol.ts';

/** Why a run is being cancelled; decides how the agent's confirmation ends it. */
export type CancelCause = 'client_closed' | 'cancelled' | 'deadline' | 'capacity' | 'shutdown';

export type RunState = { phase: RunPhase; attached: boolean; holdsLock: boolean; cause: CancelCause | null };

export type Trigger =
  | { kind: 'pause'; pausedRuns: number; maxPausedRuns: number }
  | { kind: 'complete' }
  | { kind: 'fail' }
  | { kind: 'detach' }
  /** `shutdown`: the daemon is stopping and ends its runs itself, so their endings are confirmed. */
  | { kind: 'cancel'; cause?: 'shutdown' }
  | { kind: 'deadline' }
  /** The caller has checked the turn lock (it is free, or held by this run). */
  | { kind: 'answer'; valid: boolean; replayOk: boolean }
  | { kind: 'attach'; replayOk: boolean }
  | { kind: 'steer' }
  | { kind: 'confirmed' };

export type Effect =
  | 'emit_interaction'
  | 'deny_interaction'
  | 'emit_completed'
  | 'emit_failed'
  | 'emit_capacity_failure'
  | 'emit_ended'
  | 'end_stream'
  | 'take_lock'
  | 'release_lock'
  | 'start_deadline'
  | 'clear_deadline'
  | 'cancel_agent'
  | 'deliver_answer'
  | 'deliver_steer'
  | 'attach';

export type Outcome = { state: RunState; effects: Effect[]; refusal: RefusalKind | null };

export const initialRunState: RunState = { phase: 'running', attached: true, holdsLock: true, cause: null };

const TERMINAL: ReadonlySet<RunPhase> = new Set(['completed', 'failed', 'ended']);
export const isTerminalPhase = (p: RunPhase) => TERMINAL.has(p);

const ok = (state: RunState, effects: Effect[] = []): Outcome => ({ state, effects, refusal: null });
const refuse = (state: RunState, refusal: RefusalKind, effects: Effect[] = []): Outcome => ({
  state,
  effects,
  refusal,
});
const unlock = (s: RunState): Effect[] => (s.holdsLock ? ['release_lock'] : []);

/** The run reaches a terminal phase: emit its event, close any stream, free the lock. */
function finish(s: RunState, phase: RunPhase, emit: Effect): Outcome {
  return ok({ phase, attached: false, holdsLock: false, cause: s.cause }, [
    emit,
    'end_stream',
    ...unlock(s),
    'clear_deadline',
  ]);
}

export function step(s: RunState, t: Trigger): Outcome {
  if (isTerminalPhase(s.phase)) {
    if (t.kind === 'answer') return refuse(s, 'interaction_not_pending');
    if (t.kind === 'attach')
      return s.attached
        ? refuse(s, 'already_attached')
        : t.replayOk
          ? ok({ ...s, attached: true }, ['attach'])
          : refuse(s, 'replay_lost');
    if (t.kind === 'detach') return ok({ ...s, attached: false });
    if (t.kind === 'pause') return ok(s, ['deny_interaction']);
    if (t.kind === 'steer') return refuse(s, 'busy');
    return ok(s);
  }
  switch (t.kind) {
    case 'pause':
      if (s.phase !== 'running') return ok(s, ['deny_interaction']);
      if (t.pausedRuns >= t.maxPausedRuns)
        return ok({ ...s, phase: 'cancelling', cause: 'capacity' }, ['deny_interaction', 'cancel_agent']);
      return ok({ ...s, phase: 'paused', attached: false, holdsLock: false }, [
        'emit_interaction',
        'end_stream',
        ...unlock(s),
        'start_deadline',
      ]);
    case 'complete':
      return s.phase === 'cancelling' ? step(s, { kind: 'confirmed' }) : finish(s, 'completed', 'emit_completed');
    case 'fail':
      return finish(s, 'failed', 'emit_failed');
    case 'confirmed':
      return s.cause === 'capacity'
        ? finish(s, 'failed', 'emit_capacity_failure')
        : finish({ ...s, cause: s.cause ?? 'cancelled' }, 'ended', 'emit_ended');
    case 'detach':
      if (s.phase === 'running' && s.attached)
        return ok({ ...s, phase: 'cancelling', attached: false, cause: 'client_closed' }, ['cancel_agent']);
      return ok({ ...s, attached: false });
    case 'cancel':
      if (s.phase === 'cancelling') return ok(s);
      return ok({ ...s, phase: 'cancelling', cause: t.cause ?? 'cancelled' }, ['clear_deadline', 'cancel_agent']);
    case 'deadline':
      return s.phase === 'paused' ? ok({ ...s, phase: 'cancelling', cause: 'deadline' }, ['cancel_agent']) : ok(s);
    case 'answer':
      if (s.phase !== 'paused') return refuse(s, s.attached ? 'already_attached' : 'interaction_not_pending');
      if (s.attached) return refuse(s, 'already_attached');
      if (!t.valid) return refuse(s, 'answer_rejected');
      if (!t.replayOk)
        return refuse({ ...s, phase: 'cancelling', cause: 'cancelled' }, 'replay_lost', [
          'clear_deadline',
          'cancel_agent',
        ]);
      return ok({ ...s, phase: 'running', attached: true, holdsLock: true }, [
        'take_lock',
        'clear_deadline',
        'deliver_answer',
        'attach',
      ]);
    case 'attach':
      if (s.attached) return refuse(s, 'already_attached');
      if (!t.replayOk) return refuse(s, 'replay_lost');
      return ok({ ...s, attached: true }, ['attach']);
    case 'steer':
      return s.phase === 'running' ? ok(s, ['deliver_steer']) : refuse(s, 'busy');
  }
}
