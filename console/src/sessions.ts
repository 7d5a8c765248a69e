// An intern's sessions as the gateway keeps them (docs/guides/sessions.md): listed and read over
// the API, so any browser, tab or colleague sees the same history. turnsOf maps a transcript's
// entries to the console's turns (pure); a paused run's question comes back answerable.
import type { EntryBody } from '../../src/shared/transcript.ts';
import { api } from './api.ts';
import { promptBody, type Part, type Session, type Turn } from './chat.ts';

export type SessionInfo = {
  id: string;
  title: string;
  state: 'completed' | 'paused' | 'failed' | 'cancelled';
  entries: number;
  created_at: string;
  updated_at: string;
};

/** A transcript entry as the API shows it: the gateway's entry with its place and time. */
export type Entry = { seq: number; at: string } & EntryBody;

type Interaction = Extract<Part, { type: 'interaction' }>;
/** How an answer reads in the transcript (the chat screen's words for an option or a form). */
export type AnswerLabel = (part: Interaction, answer: string) => string;

const CUT = ' […]';
const STATUS = { stop: 'done', tool_calls: 'paused', error: 'failed' } as const;

/** Entries, oldest first, as turns: each prompt starts one; entries before the first prompt (a
 * page boundary) are left out. */
export function turnsOf(sessionId: string, entries: Entry[], label: AnswerLabel): Turn[] {
  const turns: Turn[] = [];
  let turn: Turn | undefined;
  for (const e of entries) {
    if (e.type === 'user' && !e.steered) {
      const mode = e.approval_mode ?? 'self-drive';
      turn = {
        id: `s${e.seq}`,
        prompt: e.content + (e.truncated ? CUT : ''),
        mode,
        parts: [],
        // A request still streaming when the transcript was read has no end entry yet.
        status: 'interrupted',
        last: promptBody(sessionId, e.content, mode),
        rev: 0,
      };
      turns.push(turn);
      continue;
    }
    if (!turn) continue;
    const parts = turn.parts;
    switch (e.type) {
      case 'user':
        parts.push({ type: 'steer', text: e.content });
        break;
      case 'assistant':
      case 'reasoning':
        parts.push({ type: e.type === 'assistant' ? 'text' : 'reasoning', text: e.content + (e.truncated ? CUT : '') });
        break;
      case 'tool':
        parts.push({ type: 'tool', tool: e.tool });
        break;
      case 'interaction':
        parts.push({
          type: 'interaction',
          call: {
            index: 0,
            id: e.interaction_id,
            type: 'function',
            function: { name: 'service.provide_input', arguments: JSON.stringify(e.interaction) },
          },
          args: e.interaction,
        });
        break;
      case 'answer': {
        const asked = parts.find((p): p is Interaction => p.type === 'interaction' && p.call.id === e.interaction_id);
        if (asked) asked.answer = label(asked, e.content);
        turn.status = 'streaming';
        break;
      }
      case 'error':
        parts.push({
          type: 'error',
          problem: {
            status: e.error.code,
            message: e.error.message,
            reason: e.error.reason,
            retryable: false,
            fields: {},
          },
        });
        break;
      case 'end':
        turn.status = e.finish_reason ? STATUS[e.finish_reason] : 'interrupted';
        if (e.model) turn.model = e.model;
        if (e.usage) turn.usage = e.usage;
        break;
    }
    turn.rev++;
  }
  // An answer whose request has not ended yet: the run goes on elsewhere, or ended unrecorded.
  for (const t of turns) if (t.status === 'streaming') t.status = 'interrupted';
  return turns;
}

/** The intern's sessions, the most recently used first (the first 100). */
export const listSessions = (internId: string) =>
  api<{ data: SessionInfo[] }>('GET', `/interns/${encodeURIComponent(internId)}/sessions?limit=100`).then(
    (r) => r.data,
  );

/** Pages of 500 entries read from a transcript's end: a longer one opens at its latest 3,000
 * (1,000 turns of a prompt and an answer). */
const PAGES = 6;

export async function loadSession(internId: string, id: string, label: AnswerLabel): Promise<Session> {
  const path = `/interns/${encodeURIComponent(internId)}/sessions/${encodeURIComponent(id)}?limit=500`;
  let entries: Entry[] = [];
  let info: SessionInfo | undefined;
  let before: number | undefined;
  for (let i = 0; i < PAGES; i++) {
    const page = await api<{ session: SessionInfo; data: Entry[]; next_cursor?: number }>(
      'GET',
      before === undefined ? path : `${path}&before=${before}`,
    );
    info = page.session;
    entries = [...page.data, ...entries];
    before = page.next_cursor;
    if (before === undefined) break;
  }
  return { id, title: info!.title, updated: Date.parse(info!.updated_at), turns: turnsOf(id, entries, label) };
}

export const newSessionId = () => `console-${crypto.randomUUID()}`;
