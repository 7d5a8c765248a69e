// What an operation answers: a stream, a steering acknowledgement, or a refusal with its
// message (status, reason and retryable come from the protocol's REFUSALS table).
import type { RefusalKind } from '../../shared/daemon-protocol.ts';

export type Result =
  | { kind: 'stream' }
  | { kind: 'steered'; session_id: string }
  | { kind: 'refusal'; refusal: RefusalKind; message: string; retryAfterS?: number };

export const MESSAGES: Record<RefusalKind, string> = {
  bad_request: 'invalid request',
  answer_rejected: 'the interaction does not accept this answer',
  unauthorized: 'missing or wrong daemon secret',
  run_not_found: 'no such run',
  interaction_unknown: 'no such interaction in this session',
  intern_not_ready: 'the intern is not running',
  busy: 'another turn is running on this intern',
  interaction_not_pending: 'the interaction is no longer waiting: its run has ended',
  already_attached: 'another request is already attached to this run',
  replay_lost: 'the run produced more output than the intern retains for replay; the paused stream cannot resume',
  payload_too_large: 'request body exceeds 1 MiB',
  intern_unreachable: 'the agent could not be reached',
  intern_rejected: 'the agent rejected the request',
  paused_capacity: 'the intern cannot hold another run open across a question',
};

export function refusal(kind: RefusalKind, message: string): Result {
  return { kind: 'refusal', refusal: kind, message };
}
