// An intern's sessions in the store (docs/guides/sessions.md): each chat request's transcript
// appended as the request ends, the sessions listed newest first, a transcript read a page at a
// time from its end. Callers find the intern first (findIntern: the chat route's authorisation).
import { and, desc, eq, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { internSessionEntries, internSessions, type InternSessionRow } from '../store/schema-interns.ts';
import { invalidRequest, resourceNotFound } from '../errors.ts';
import type { Entry } from './transcript.ts';
import type { InternSession, ListSessionsQuery, TranscriptEntry, TranscriptQuery } from './sessions.schemas.ts';

/** A session keeps its first this many entries; later requests of it are not recorded. */
export const MAX_SESSION_ENTRIES = 5_000;
/** A transcript page stops once its entries hold this many characters of text (at least one entry). */
export const PAGE_CHARS = 1_000_000;
const TITLE_CHARS = 120;

export const sessionNotFound = () => resourceNotFound('session');

type State = InternSession['state'];

function stateOf(entries: Entry[]): State {
  const end = entries.at(-1)?.body;
  if (end?.type !== 'end' || end.finish_reason === null) return 'cancelled';
  return end.finish_reason === 'stop' ? 'completed' : end.finish_reason === 'tool_calls' ? 'paused' : 'failed';
}

function titleOf(entries: Entry[]): string {
  const first = entries.find((e) => e.body.type === 'user' || e.body.type === 'assistant')?.body;
  const text = first && 'content' in first ? first.content.replace(/\s+/g, ' ').trim() : '';
  return text.slice(0, TITLE_CHARS) || '(no message)';
}

/** Appends one request's entries to its session (made by its first request). */
export async function recordTranscript(
  db: Db,
  opts: { internId: string; sessionId: string; entries: Entry[] },
): Promise<void> {
  const { internId, sessionId, entries } = opts;
  if (!entries.length) return;
  const now = new Date(entries.at(-1)!.at);
  await db.transaction(async (tx) => {
    // The row lock this takes orders two requests of one session; a full session takes no more.
    const [row] = await tx
      .insert(internSessions)
      .values({
        internId,
        id: sessionId,
        title: titleOf(entries),
        state: stateOf(entries),
        entries: entries.length,
        createdAt: new Date(entries[0]!.at),
        updatedAt: now,
      })
      .onConflictDoUpdate({
        target: [internSessions.internId, internSessions.id],
        set: {
          state: stateOf(entries),
          updatedAt: now,
          entries: sql`${internSessions.entries} + ${entries.length}`,
        },
        setWhere: sql`${internSessions.entries} < ${MAX_SESSION_ENTRIES}`,
      })
      .returning({ entries: internSessions.entries });
    if (!row) return;
    const first = row.entries - entries.length + 1;
    await tx.insert(internSessionEntries).values(
      entries.map((e, i) => ({
        internId,
        sessionId,
        seq: first + i,
        at: new Date(e.at),
        kind: e.body.type,
        body: e.body as unknown as Record<string, unknown>,
      })),
    );
  });
}

export function toSession(r: InternSessionRow): InternSession {
  return {
    id: r.id,
    intern_id: r.internId,
    title: r.title,
    state: r.state,
    entries: r.entries,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

const badCursor = () => invalidRequest('starting_after: not a cursor returned by this API');

function decodeCursor(c: string): { at: Date; id: string } {
  const raw = Buffer.from(c, 'base64url').toString('utf8');
  const bar = raw.indexOf('|');
  const at = new Date(raw.slice(0, bar));
  const id = raw.slice(bar + 1);
  if (bar < 0 || !id || Number.isNaN(at.getTime())) throw badCursor();
  return { at, id };
}
const encodeCursor = (r: InternSessionRow) => Buffer.from(`${r.updatedAt.toISOString()}|${r.id}`).toString('base64url');

/** Newest first (by the latest request), `limit` at a time. */
export async function listSessions(db: Db, opts: { internId: string; query: ListSessionsQuery }) {
  const q = opts.query;
  const conds = [eq(internSessions.internId, opts.internId)];
  if (q.starting_after) {
    const c = decodeCursor(q.starting_after);
    conds.push(
      or(lt(internSessions.updatedAt, c.at), and(eq(internSessions.updatedAt, c.at), lt(internSessions.id, c.id)))!,
    );
  }
  const rows = await db
    .select()
    .from(internSessions)
    .where(and(...conds))
    .orderBy(desc(internSessions.updatedAt), desc(internSessions.id))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  return {
    data: page.map(toSession),
    has_more: hasMore,
    ...(hasMore ? { next_cursor: encodeCursor(page.at(-1)!) } : {}),
  };
}

const textOf = (body: Record<string, unknown>) => JSON.stringify(body).length;

/** The session and its latest `limit` entries before `before`, oldest first, within PAGE_CHARS. */
export async function readTranscript(db: Db, opts: { internId: string; sessionId: string; query: TranscriptQuery }) {
  const { internId, sessionId, query: q } = opts;
  const [session] = await db
    .select()
    .from(internSessions)
    .where(and(eq(internSessions.internId, internId), eq(internSessions.id, sessionId)));
  if (!session) throw sessionNotFound();
  const conds = [eq(internSessionEntries.internId, internId), eq(internSessionEntries.sessionId, sessionId)];
  if (q.before !== undefined) conds.push(lt(internSessionEntries.seq, q.before));
  const rows = await db
    .select()
    .from(internSessionEntries)
    .where(and(...conds))
    .orderBy(desc(internSessionEntries.seq))
    .limit(q.limit);
  const kept: typeof rows = [];
  let chars = 0;
  for (const r of rows) {
    chars += textOf(r.body);
    if (kept.length && chars > PAGE_CHARS) break;
    kept.push(r);
  }
  const oldest = kept.at(-1)?.seq ?? 1;
  const hasMore = oldest > 1;
  return {
    session: toSession(session),
    data: kept.reverse().map((r) => ({ ...r.body, seq: r.seq, at: r.at.toISOString() }) as TranscriptEntry),
    has_more: hasMore,
    ...(hasMore ? { next_cursor: oldest } : {}),
  };
}
