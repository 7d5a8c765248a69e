// This tab's record of each intern's chat sessions (the API lists none): the transcript as it
// streamed and any question still waiting, kept in sessionStorage beside the key, so a reload
// shows the conversation and can answer a paused run from its session.
import type { Session } from './chat.ts';

const slot = (internId: string) => `cohort.sessions.${internId}`;
/** Room for many sessions within the browser's ~5 MB: a huge transcript keeps its tail. */
const MAX_PART = 200_000;

export function loadSessions(internId: string): Session[] {
  try {
    const sessions = JSON.parse(sessionStorage.getItem(slot(internId)) ?? '[]') as Session[];
    // A turn that was streaming when the page went away was cancelled by that disconnect.
    for (const s of sessions) for (const t of s.turns) if (t.status === 'streaming') t.status = 'interrupted';
    return sessions;
  } catch {
    return [];
  }
}

export function saveSessions(internId: string, sessions: Session[]) {
  const trimmed = sessions.map((s) => ({
    ...s,
    turns: s.turns.map((t) => ({
      ...t,
      parts: t.parts.map((p) =>
        'text' in p && p.text.length > MAX_PART ? { ...p, text: '…' + p.text.slice(-MAX_PART) } : p,
      ),
    })),
  }));
  try {
    sessionStorage.setItem(slot(internId), JSON.stringify(trimmed));
  } catch {
    // Storage full: the session goes on in memory; only a reload would lose it.
  }
}

export const newSessionId = () => `console-${crypto.randomUUID()}`;
