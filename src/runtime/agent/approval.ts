// Manual-mode consent over ACP: a permission request before each shell call (remembering
// *_always answers for the run), and ask_user questions as form elicitations.
import {
  methods,
  fieldsToSchema,
  META_SANDBOX,
  type AgentContext,
  type AskField,
  type PermissionOptionKind,
  type RequestPermissionRequest,
} from '../acp/index.ts';
import type { AgentSession } from './sessions.ts';
import type { Approval } from './tools.ts';

const OPTIONS: { kind: PermissionOptionKind; name: string }[] = [
  { kind: 'allow_once', name: 'Allow once' },
  { kind: 'allow_always', name: 'Allow for this run' },
  { kind: 'reject_once', name: 'Reject' },
  { kind: 'reject_always', name: 'Reject for this run' },
];

export async function approveShell(
  client: AgentContext,
  s: AgentSession,
  call: { toolCallId: string; command: string; escalated: boolean },
): Promise<Approval> {
  const level = call.escalated ? 'escalated' : 'sandboxed';
  // An allowed escalation covers sandboxed calls too: they are strictly less powerful.
  const standing = s.standing[level] ?? (s.standing.escalated === 'allow' ? 'allow' : undefined);
  if (standing) return standing;
  const params: RequestPermissionRequest = {
    sessionId: s.id,
    toolCall: {
      toolCallId: call.toolCallId,
      name: 'shell',
      kind: 'execute',
      status: 'pending',
      title: call.escalated ? `Run outside the sandbox: ${call.command}` : `Run in the sandbox: ${call.command}`,
      rawInput: { command: call.command, escalate: call.escalated },
      _meta: { [META_SANDBOX]: call.escalated ? 'escalated' : 'inner' },
    },
    options: OPTIONS.map((o) => ({ optionId: o.kind, name: o.name, kind: o.kind })),
  };
  const res = await client.request(methods.client.session.requestPermission, params);
  if (res.outcome.outcome !== 'selected') return 'cancelled';
  const kind = OPTIONS.find((o) => o.kind === (res.outcome as { optionId: string }).optionId)?.kind ?? 'reject_once';
  if (kind === 'allow_always') s.standing[level] = 'allow';
  if (kind === 'reject_always') s.standing[level] = 'reject';
  return kind.startsWith('allow') ? 'allow' : 'reject';
}

export async function askUser(
  client: AgentContext,
  s: AgentSession,
  q: { toolCallId: string; message: string; fields: AskField[] },
): Promise<string> {
  const res = await client.request(methods.client.elicitation.create, {
    mode: 'form',
    sessionId: s.id,
    toolCallId: q.toolCallId,
    message: q.message,
    requestedSchema: fieldsToSchema(q.fields),
  });
  if (res.action === 'accept') return JSON.stringify((res as { content?: unknown }).content ?? {});
  if (res.action === 'decline') return 'The user declined to answer.';
  return 'The user cancelled the question.';
}
