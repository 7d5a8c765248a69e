// ACP permission requests and form elicitations ⇄ interactions
// (docs/reference/intern-chat.md#interactions), and the caller's answer (the `tool` message content) → the
// ACP response. Pure.
import {
  checkAnswer,
  formSchemaOf,
  schemaToFields,
  type AskField,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  META_SANDBOX,
} from '../acp/index.ts';
import { PermissionOptionKind, type Interaction } from '../../shared/daemon-protocol.ts';

export type Asked =
  | { kind: 'permission'; interaction: Interaction; optionIds: Map<string, string> }
  | { kind: 'elicitation'; interaction: Interaction; fields: AskField[] };

export type AcpAnswer =
  | { kind: 'permission'; response: RequestPermissionResponse }
  | { kind: 'elicitation'; response: CreateElicitationResponse };

/** The decoded answer, whether it also ends the run, or why it was rejected. */
export type Decoded = { ok: true; answer: AcpAnswer; cancelRun: boolean } | { ok: false; message: string };

export function fromPermission(req: RequestPermissionRequest): Asked {
  const optionIds = new Map<string, string>();
  for (const o of req.options)
    if (PermissionOptionKind.safeParse(o.kind).success && !optionIds.has(o.kind)) optionIds.set(o.kind, o.optionId);
  const options = [...optionIds.keys()] as PermissionOptionKind[];
  const t = req.toolCall;
  const input =
    t.rawInput !== null && typeof t.rawInput === 'object' && !Array.isArray(t.rawInput)
      ? (t.rawInput as Record<string, unknown>)
      : null;
  const where = t._meta?.[META_SANDBOX];
  const sandbox = where === 'inner' || where === 'escalated' ? where : null;
  return {
    kind: 'permission',
    interaction: { kind: 'permission', operation: t.name ?? null, options, title: t.title ?? null, input, sandbox },
    optionIds,
  };
}

export function fromElicitation(req: CreateElicitationRequest): Asked | null {
  const schema = formSchemaOf(req);
  if (!schema) return null;
  const fields = schemaToFields(schema);
  return { kind: 'elicitation', interaction: { kind: 'elicitation', message: req.message, fields }, fields };
}

/** The response that tells the agent the question was withdrawn (ACP's cancellation rule). */
export function cancelledAnswer(kind: Asked['kind']): AcpAnswer {
  return kind === 'permission'
    ? { kind, response: { outcome: { outcome: 'cancelled' } } }
    : { kind, response: { action: 'cancel' } };
}

/** The self-drive consent: the agent's allow option, preferring the narrowest. */
export function selfDriveConsent(a: Extract<Asked, { kind: 'permission' }>): RequestPermissionResponse {
  const id = a.optionIds.get('allow_once') ?? a.optionIds.get('allow_always');
  return id ? { outcome: { outcome: 'selected', optionId: id } } : { outcome: { outcome: 'cancelled' } };
}

export function decodeAnswer(a: Asked, text: string): Decoded {
  if (a.kind === 'permission') {
    if (text === 'cancel') return { ok: true, answer: cancelledAnswer('permission'), cancelRun: true };
    const id = a.optionIds.get(text);
    if (!id) return { ok: false, message: `answer must be one of ${[...a.optionIds.keys(), 'cancel'].join(', ')}` };
    return {
      ok: true,
      answer: { kind: 'permission', response: { outcome: { outcome: 'selected', optionId: id } } },
      cancelRun: false,
    };
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return {
      ok: false,
      message: 'answer must be a JSON object string {"action": "accept"|"decline"|"cancel", "content": {...}}',
    };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, message: 'answer must be a JSON object' };
  const { action, content } = v as { action?: unknown; content?: unknown };
  if (action === 'decline' || action === 'cancel')
    return { ok: true, answer: { kind: 'elicitation', response: { action } }, cancelRun: false };
  if (action !== 'accept') return { ok: false, message: 'action must be accept, decline or cancel' };
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    return { ok: false, message: 'accept needs a content object' };
  const problem = checkAnswer(a.fields, content as Record<string, unknown>);
  if (problem) return { ok: false, message: problem };
  return {
    ok: true,
    answer: { kind: 'elicitation', response: { action: 'accept', content: content as Record<string, string> } },
    cancelRun: false,
  };
}
