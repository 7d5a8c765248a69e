// ACP session updates → daemon run events. Pure: the model and usage are reported exactly as the
// agent reports them (cohort's `_meta` keys first, the stable ACP fields otherwise).
import { META_MODEL, META_USAGE, type SessionUpdate } from '../acp/index.ts';
import { Usage, type RunEventBody } from '../protocol/daemon.ts';

function metaOf(u: SessionUpdate): Record<string, unknown> {
  return ((u as { _meta?: Record<string, unknown> | null })._meta ?? {}) as Record<string, unknown>;
}

export function usageOf(u: Extract<SessionUpdate, { sessionUpdate: 'usage_update' }>): Usage {
  const reported = Usage.safeParse(metaOf(u)[META_USAGE]);
  if (reported.success) return reported.data;
  const cost = u.cost && u.cost.currency === 'USD' ? { cost: u.cost.amount } : {};
  return { prompt_tokens: u.used, completion_tokens: 0, total_tokens: u.used, ...cost };
}

/** The events one update produces, given the model reported so far. */
export function eventsOf(u: SessionUpdate, model: string | null): RunEventBody[] {
  const out: RunEventBody[] = [];
  const reported = metaOf(u)[META_MODEL];
  if (typeof reported === 'string' && reported !== model) out.push({ type: 'model', model: reported });
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      if (u.content.type === 'text') out.push({ type: 'text', text: u.content.text });
      break;
    case 'agent_thought_chunk':
      if (u.content.type === 'text') out.push({ type: 'reasoning', text: u.content.text });
      break;
    case 'usage_update':
      out.push({ type: 'usage', usage: usageOf(u) });
      break;
  }
  return out;
}
