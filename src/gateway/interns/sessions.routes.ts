// GET /interns/{id}/sessions and GET /interns/{id}/sessions/{session_id} (docs/guides/sessions.md):
// an intern's sessions and transcripts, for the keys that may chat with it. Read from the store,
// so a sleeping intern is not woken to answer.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { refusals } from '../http/openapi.ts';
import { SessionId } from '../../shared/daemon-protocol.ts';
import { LifecycleError } from './interns.schemas.ts';
import { findIntern } from './interns.ts';
import { ListSessionsQuery, SessionList, Transcript, TranscriptQuery } from './sessions.schemas.ts';
import { listSessions, readTranscript } from './sessions.ts';

const common = { tags: ['interns'], guard: 'interns' as const, errorStyle: 'chat' as const };
const errors = (...codes: number[]) => refusals(LifecycleError, ...codes);

export const internSessionRoutes: RouteModule = (app, ctx) => {
  const db = ctx.store.db;

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/interns/:id/sessions',
    summary: "List an intern's chat sessions, the most recently used first",
    params: z.object({ id: z.string().describe('intern id') }),
    query: ListSessionsQuery,
    responses: { 200: { description: 'page', schema: SessionList }, ...errors(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, query }) => {
      const intern = await findIntern(db, { principal: principalOf(req), id: params.id });
      return listSessions(db, { internId: intern.id, query });
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/interns/:id/sessions/:sessionId',
    summary: "A session's transcript: its latest entries, earlier pages by next_cursor",
    params: z.object({ id: z.string().describe('intern id'), sessionId: SessionId.describe('session id') }),
    query: TranscriptQuery,
    responses: { 200: { description: 'transcript page', schema: Transcript }, ...errors(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params, query }) => {
      const intern = await findIntern(db, { principal: principalOf(req), id: params.id });
      return readTranscript(db, { internId: intern.id, sessionId: params.sessionId, query });
    },
  });
};
