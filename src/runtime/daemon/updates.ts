// ACP session updates → daemon run events. Pure: the model and usage are reported exactly as the
// agent reports them (cohort's `_meta` keys first, the stable ACP fields otherwise).
import { META_MODEL, META_USAGE, type SessionUpdate } from '../acp/index.ts';
import { TOOL_TEXT_LIMIT, Usage, type RunEventBody } from '../../shared/daemon-protocol.ts';

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

const STATUSES = new Set(['pending', 'in_progress', 'completed', 'failed']);
type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

/** A tool's input or output as text: a string as it is, a shell command by its command line, anything else as JSON. */
function toolText(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  const command = (v as { command?: unknown }).command;
  if (typeof command === 'string') return command;
  if (Array.isArray(command) && command.every((c) => typeof c === 'string')) return command.join(' ');
  return JSON.stringify(v, null, 2) ?? null;
}

/** The text blocks of a tool call's ACP content (the output as the agent shows it), joined. */
function contentText(content: unknown): string | null {
  if (!Array.isArray(content)) return null;
  const parts: string[] = [];
  for (const c of content as { type?: unknown; content?: { type?: unknown; text?: unknown }; path?: unknown }[]) {
    if (c?.type === 'content' && c.content?.type === 'text' && typeof c.content.text === 'string')
      parts.push(c.content.text);
    else if (c?.type === 'diff' && typeof c.path === 'string') parts.push(`(edited ${c.path})`);
  }
  return parts.length ? parts.join('\n') : null;
}

const head = (t: string | null) => (t && t.length > TOOL_TEXT_LIMIT ? `${t.slice(0, TOOL_TEXT_LIMIT)}…` : t);
const tail = (t: string | null) => (t && t.length > TOOL_TEXT_LIMIT ? `…${t.slice(-TOOL_TEXT_LIMIT)}` : t);

/** An ACP `tool_call` or `tool_call_update` as a `tool` event. */
function toolEvent(u: SessionUpdate): RunEventBody | null {
  const t = u as {
    toolCallId?: unknown;
    title?: unknown;
    kind?: unknown;
    status?: unknown;
    rawInput?: unknown;
    rawOutput?: unknown;
    content?: unknown;
  };
  if (typeof t.toolCallId !== 'string') return null;
  return {
    type: 'tool',
    id: t.toolCallId,
    title: typeof t.title === 'string' ? t.title : null,
    kind: typeof t.kind === 'string' ? t.kind : null,
    status: typeof t.status === 'string' && STATUSES.has(t.status) ? (t.status as ToolStatus) : null,
    input: head(toolText(t.rawInput)),
    output: tail(contentText(t.content) ?? toolText(t.rawOutput)),
  };
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
  const tool = kind === 'tool_call' || kind === 'tool_call_update' ? toolEvent(u) : null;
  if (tool) out.push(tool);
  return out;
}
