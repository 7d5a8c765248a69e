// ACP session updates → daemon run events. Pure: the model and usage are reported exactly as the
// agent reports them (cohort's `_meta` keys first, the stable ACP fields otherwise).
import { META_MODEL, META_USAGE, type SessionUpdate } from '../acp/index.ts';
import { Usage, type RunEventBody } from '../../shared/daemon-protocol.ts';

function metaOf(u: SessionUpdate): Record<string, unknown> {
  return ((u as { _meta?: Record<string, unknown> | null })._meta ?? {}) as Record<string, unknown>;
}

/** The usage an update reports, or null when it carries none we can read. */
export function usageOf(u: SessionUpdate): Usage | null {
  const reported = Usage.safeParse(metaOf(u)[META_USAGE]);
  if (reported.success) return reported.data;
  const { used, cost } = u as { used?: unknown; cost?: { amount?: unknown; currency?: unknown } | null };
  if (!Number.isInteger(used)) return null;
  const usd = cost?.currency === 'USD' && typeof cost.amount === 'number' ? { cost: cost.amount } : {};
  return { prompt_tokens: used as number, completion_tokens: 0, total_tokens: used as number, ...usd };
}

/** Text of a text content block; the SDK does not validate updates for us (acp/client.ts). */
function textOf(u: SessionUpdate): string | null {
  const c = (u as { content?: { type?: unknown; text?: unknown } }).content;
  return c?.type === 'text' && typeof c.text === 'string' ? c.text : null;
}

/** The events one update produces, given the model reported so far. */
export function eventsOf(u: SessionUpdate, model: string | null): RunEventBody[] {
  const out: RunEventBody[] = [];
  const reported = metaOf(u)[META_MODEL];
  if (typeof reported === 'string' && reported !== model) out.push({ type: 'model', model: reported });
  const kind = u.sessionUpdate;
  const text = kind === 'agent_message_chunk' || kind === 'agent_thought_chunk' ? textOf(u) : null;
  // An empty chunk (Claude Code opens its messages with one) would stream an empty content delta.
  if (text) out.push({ type: kind === 'agent_message_chunk' ? 'text' : 'reasoning', text });
  const usage = kind === 'usage_update' ? usageOf(u) : null;
  if (usage) out.push({ type: 'usage', usage });
  return out;
}
