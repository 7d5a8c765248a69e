import type { Sealer } from '../crypto/seal.ts';
import { internNotReady, invalidRequest } from '../errors.ts';
import { MAX_PROMPT_CHARS, promptTooLong, type TurnRequest } from '../../shared/daemon-protocol.ts';
import type { InternMessage, ChatRequest } from './chat.schemas.ts';
import type { DaemonTarget } from './daemon-client.ts';
import { secretBinding } from './interns.ts';
import type { InternRow } from '../store/schema-interns.ts';

export type ChatAction =
  | { kind: 'turn'; body: TurnRequest }
  | { kind: 'answer'; sessionId: string; interactionId: string; answer: string };

const text = (c: Extract<InternMessage, { role: 'user' }>['content']) =>
  typeof c === 'string' ? c : c.map((p) => p.text).join('');

export function chatAction(req: ChatRequest): ChatAction {
  const i = req.messages.length - 1;
  const last = req.messages[i]!;
  if (last.role === 'user') {
    const prompt = text(last.content);
    if (!prompt.length) throw invalidRequest(`messages.${i}.content: the prompt must not be empty`);
    if (promptTooLong(prompt))
      throw invalidRequest(`messages.${i}.content: the prompt exceeds ${MAX_PROMPT_CHARS} characters`);
    return {
      kind: 'turn',
      body: { prompt, session_id: req.session_id, approval_mode: req.approval_mode ?? 'self-drive' },
    };
  }
  if (last.role === 'tool') {
    if (!req.session_id) throw invalidRequest('session_id: required when the last message has role tool');
    return { kind: 'answer', sessionId: req.session_id, interactionId: last.tool_call_id, answer: text(last.content) };
  }
  throw invalidRequest(`messages.${i}.role: the last message must have role user or tool`);
}

/** What the caller can do about an intern that is not running, by its status. */
function nextStep(status: string, id: string): string {
  const provision = `POST /api/v1/interns/${id}/provision`;
  switch (status) {
    case 'queued':
      return `it was never provisioned; ${provision} starts it (or create it with "provision": true)`;
    case 'provisioning':
      return `it is starting; retry in a few seconds (GET /api/v1/interns/${id} shows its progress)`;
    case 'stopped':
      return `it is suspended; ${provision} starts it again`;
    case 'failed':
      return `GET /api/v1/interns/${id} says why in last_failure_message; ${provision} starts it again`;
    default:
      return 'it is being deleted';
  }
}

export const notReady = (status: string, id: string) => internNotReady(status, nextStep(status, id));

/** Where a chat reaches an awake intern's daemon (hibernation.ts wakes a sleeping one first). */
export function daemonTarget(sealer: Sealer, row: InternRow): DaemonTarget {
  if (row.status !== 'running' || !row.hostname || !row.sealedSecret) throw notReady(row.status, row.id);
  return { baseUrl: row.hostname, secret: sealer.open(row.sealedSecret, secretBinding.daemon(row.id)) };
}
