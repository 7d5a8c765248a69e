// The one refusal registry of the gateway and the daemon (docs/reference/errors.md): every reason
// with the statuses it is refused with, whether it also ends a stream, and whether a retry may
// succeed; and the daemon's refusals by name, each a status and a reason of that table. The
// gateway's errors (src/gateway/errors.ts) and the daemon's answers (src/runtime/daemon) both
// render from it, so a reason's retry rule is written once.
// May import: zod.
import { z } from 'zod';

/** The reason values (docs/reference/errors.md#reasons). */
export const Reason = z.enum([
  'attachment_failed',
  'bad_request',
  'busy',
  'client_closed_request',
  'interaction_not_pending',
  'interaction_unknown',
  'intern_not_ready',
  'intern_rejected',
  'intern_unreachable',
  'not_found',
  'payload_too_large',
  'rate_limited',
  'run_ended',
  'stream_severed',
  'timeout',
  'turn_failed',
]);
export type Reason = z.infer<typeof Reason>;

type ReasonRow = { statuses: number[]; inStream: boolean; retryable: 'always' | 'never' | 'as classified' };
/** Every reason a refusal gives: the statuses it is refused with, whether it also ends a stream, and
 * whether a retry may succeed. docs/reference/errors.md is this table in words (a test compares them). */
export const REASONS_TABLE: Record<Reason, ReasonRow> = {
  attachment_failed: { statuses: [409, 410], inStream: true, retryable: 'never' },
  bad_request: { statuses: [400], inStream: false, retryable: 'never' },
  busy: { statuses: [409, 503], inStream: true, retryable: 'always' },
  client_closed_request: { statuses: [499], inStream: true, retryable: 'never' },
  interaction_not_pending: { statuses: [409], inStream: true, retryable: 'never' },
  interaction_unknown: { statuses: [404], inStream: true, retryable: 'never' },
  intern_not_ready: { statuses: [409], inStream: false, retryable: 'always' },
  intern_rejected: { statuses: [502], inStream: false, retryable: 'never' },
  intern_unreachable: { statuses: [502], inStream: true, retryable: 'always' },
  not_found: { statuses: [404], inStream: false, retryable: 'never' },
  payload_too_large: { statuses: [413], inStream: false, retryable: 'never' },
  rate_limited: { statuses: [429], inStream: false, retryable: 'always' },
  run_ended: { statuses: [410], inStream: true, retryable: 'never' },
  stream_severed: { statuses: [502], inStream: true, retryable: 'always' },
  timeout: { statuses: [408, 504], inStream: true, retryable: 'always' },
  turn_failed: { statuses: [401, 403, 404, 502], inStream: true, retryable: 'as classified' },
};

/** docs/reference/errors.md#reasons: retryable is fixed for these reasons; `turn_failed` carries the
 * intern's own classification. */
export function retryableFor(reason: Reason, classified?: boolean): boolean {
  const rule = REASONS_TABLE[reason].retryable;
  return rule === 'always' || (rule === 'as classified' && (classified ?? false));
}

const DAEMON_REFUSALS = {
  bad_request: { status: 400, reason: 'bad_request' },
  answer_rejected: { status: 400, reason: 'bad_request' },
  unauthorized: { status: 401, reason: null },
  run_not_found: { status: 404, reason: 'not_found' },
  interaction_unknown: { status: 404, reason: 'interaction_unknown' },
  intern_not_ready: { status: 409, reason: 'intern_not_ready' },
  busy: { status: 409, reason: 'busy' },
  interaction_not_pending: { status: 409, reason: 'interaction_not_pending' },
  already_attached: { status: 409, reason: 'attachment_failed' },
  replay_lost: { status: 410, reason: 'attachment_failed' },
  payload_too_large: { status: 413, reason: 'payload_too_large' },
  intern_unreachable: { status: 502, reason: 'intern_unreachable' },
  intern_rejected: { status: 502, reason: 'intern_rejected' },
  paused_capacity: { status: 503, reason: 'busy' },
} as const satisfies Record<string, { status: number; reason: Reason | null }>;
export type RefusalKind = keyof typeof DAEMON_REFUSALS;

/** Every refusal the daemon gives, by name: status and reason are fixed per kind, and retryable is the reason's. */
export const REFUSALS = Object.fromEntries(
  Object.entries(DAEMON_REFUSALS).map(([kind, r]) => [
    kind,
    { ...r, retryable: r.reason ? retryableFor(r.reason) : false },
  ]),
) as { [K in RefusalKind]: (typeof DAEMON_REFUSALS)[K] & { retryable: boolean } };
