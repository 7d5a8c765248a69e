// One chat request's part of a session's transcript (docs/guides/sessions.md), built from the
// daemon's run events as the relay maps them: the user's message or answer, the assistant's text
// and reasoning (consecutive events joined), each tool call's latest state as a summary, a pause's
// question, steering messages, the error that ended it, and how it ended. Bounded: a summary keeps
// the head of a tool's input and the tail of its output, a text keeps its head, and a request
// keeps at most MAX_ENTRIES entries and MAX_CHARS characters of text.
import type { ApprovalMode, RunEvent, Usage } from '../../shared/daemon-protocol.ts';
import type { EntryBody, ToolSummary } from '../../shared/transcript.ts';

export const ENTRY_TEXT_LIMIT = 32_000;
export const TOOL_SUMMARY_LIMIT = 2_000;
export const MAX_ENTRIES = 200;
export const MAX_CHARS = 200_000;

export type { EntryBody, ToolSummary };
export type Entry = { at: number; body: EntryBody };

export type Draft = {
  entries: Entry[];
  chars: number;
  omitted: number;
  /** Index in `entries` of each tool call, by its id (-1: not kept). */
  tools: Map<string, number>;
};

const head = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);
const tail = (s: string, n: number) => (s.length > n ? s.slice(-n) : s);

export function newDraft(): Draft {
  return { entries: [], chars: 0, omitted: 0, tools: new Map() };
}

function push(d: Draft, at: number, body: EntryBody): void {
  if (d.entries.length >= MAX_ENTRIES) return void d.omitted++;
  d.entries.push({ at, body });
}

/** Text within the request's and the entry's bounds; what does not fit is dropped and marked. */
function room(d: Draft, have: number, text: string): { text: string; cut: boolean } {
  const fits = Math.max(0, Math.min(ENTRY_TEXT_LIMIT - have, MAX_CHARS - d.chars));
  const kept = head(text, fits);
  d.chars += kept.length;
  return { text: kept, cut: kept.length < text.length };
}

/** The caller's message that started the request: a prompt, or the answer to a paused run's question. */
export function recordRequest(
  d: Draft,
  at: number,
  msg: { prompt: string; mode: ApprovalMode } | { interactionId: string; answer: string },
): void {
  if ('prompt' in msg) {
    const r = room(d, 0, msg.prompt);
    push(d, at, { type: 'user', content: r.text, approval_mode: msg.mode, steered: false, truncated: r.cut });
  } else {
    const r = room(d, 0, msg.answer);
    push(d, at, { type: 'answer', interaction_id: msg.interactionId, content: r.text, truncated: r.cut });
  }
}

function appendText(d: Draft, at: number, type: 'assistant' | 'reasoning', text: string): void {
  const last = d.entries.at(-1)?.body;
  if (last?.type === type) {
    if (last.truncated) return;
    const r = room(d, last.content.length, text);
    last.content += r.text;
    last.truncated = r.cut;
    return;
  }
  const r = room(d, 0, text);
  push(d, at, { type, content: r.text, truncated: r.cut });
}

/** One daemon event into the draft (events that carry nothing for a reader change nothing). */
export function recordEvent(d: Draft, at: number, e: RunEvent): void {
  switch (e.type) {
    case 'text':
      return appendText(d, at, 'assistant', e.text);
    case 'reasoning':
      return appendText(d, at, 'reasoning', e.text);
    case 'steered': {
      const r = room(d, 0, e.text);
      return push(d, at, { type: 'user', content: r.text, approval_mode: null, steered: true, truncated: r.cut });
    }
    case 'tool': {
      const i = d.tools.get(e.id);
      if (i === -1) return;
      const known = i === undefined ? undefined : d.entries[i]?.body;
      const t: ToolSummary =
        known?.type === 'tool'
          ? known.tool
          : { id: e.id, title: null, kind: null, status: null, input: null, output: null };
      if (e.title !== null) t.title = head(e.title, TOOL_SUMMARY_LIMIT);
      if (e.kind !== null) t.kind = e.kind;
      if (e.status !== null) t.status = e.status;
      if (e.input !== null) t.input = head(e.input, TOOL_SUMMARY_LIMIT);
      if (e.output !== null) t.output = tail(e.output, TOOL_SUMMARY_LIMIT);
      if (known?.type === 'tool') return;
      // A call that was not kept stays unkept (-1): its later events are not counted again.
      d.tools.set(e.id, d.entries.length < MAX_ENTRIES ? d.entries.length : -1);
      return push(d, at, { type: 'tool', tool: t });
    }
    case 'interaction':
      return push(d, at, { type: 'interaction', interaction_id: e.interaction_id, interaction: e.interaction });
    default:
      return;
  }
}

/** The request's ending: an error (as the stream's error chunk said it) and how it finished. */
export function recordEnd(
  d: Draft,
  at: number,
  end: {
    finishReason: string | null;
    error: { code: number; reason: string; message: string } | null;
    model: string | null;
    usage: Usage | null;
  },
): Entry[] {
  if (end.error) push(d, at, { type: 'error', error: end.error });
  const finish = end.finishReason;
  const finish_reason = finish === 'stop' || finish === 'tool_calls' || finish === 'error' ? finish : null;
  // The end entry is always kept: it says how many were not.
  d.entries.push({
    at,
    body: { type: 'end', finish_reason, model: end.model, usage: end.usage, omitted: d.omitted },
  });
  return d.entries;
}
