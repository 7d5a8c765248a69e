// POST /interns/{internId}/chat/completions (docs/reference/intern-chat.md): validates, resolves the intern's
// daemon from its record, counts the turn, and relays the run as an OpenAI-compatible stream.
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute, takeBody } from '../http/route.ts';
import { refusals } from '../http/openapi.ts';
import { z } from 'zod';
import { InternChunk, ChatRequest, SteeredResponse } from './chat.schemas.ts';
import { LifecycleError } from './interns.schemas.ts';
import { chatAction } from './chat.ts';
import { findInternForChat } from './interns.ts';
import { answerInteraction, daemonRefusedConnection, startTurn, type DaemonTarget } from './daemon-client.ts';
import { ApiError, clientClosed } from '../errors.ts';
import { relay } from './relay.ts';
import type { Entry } from './transcript.ts';
import { holdSlot } from '../http/slots.ts';
import { turnSpan } from '../observability/spans.ts';
import { recordTranscript } from './sessions.ts';

const CHAT_ERRORS = [400, 401, 403, 404, 408, 409, 410, 413, 429, 502, 503, 504];

export const internChatRoutes: RouteModule = (app, ctx) => {
  // One object for every stream of this route (an open stream keeps a reference).
  const timings = {
    keepaliveMs: ctx.config.keepaliveMs,
    routeDeadlineMs: ctx.config.routeDeadlineMs,
    turnBudgetMs: ctx.config.turnBudgetMs,
  };

  defineRoute(app, ctx, {
    method: 'POST',
    path: '/interns/:internId/chat/completions',
    summary: 'Chat with an intern: an OpenAI-compatible SSE stream that can pause for a permission or an answer',
    tags: ['interns'],
    guard: 'interns',
    errorStyle: 'chat',
    params: z.object({ internId: z.string().describe('intern id') }),
    headers: z.object({
      'x-cohort-tool-events': z
        .enum(['0', '1'], { error: 'must be 1 (tool calls as cohort_tool chunks) or 0' })
        .optional()
        .describe(
          "1: the intern's tool calls also arrive, as chunks with an empty delta and a cohort_tool object (docs/reference/tool-events.md)",
        ),
    }),
    body: ChatRequest,
    responses: {
      200: {
        description: 'SSE stream of chat.completion.chunk events, then data: [DONE]',
        schema: InternChunk,
        contentType: 'text/event-stream',
      },
      202: { description: 'delivered into the running turn of this session', schema: SteeredResponse },
      ...refusals(LifecycleError, ...CHAT_ERRORS),
    },
    handler: async (req, reply, input) => {
      const principal = principalOf(req);
      const action = chatAction(takeBody(input));
      const toolEvents = input.headers['x-cohort-tool-events'] === '1';
      // Fastify keeps the request until the response ends; a stream may stay open for minutes and
      // the body may be a 1 MiB history, of which the action keeps only the last message.
      req.body = null;
      const row = await findInternForChat(ctx.store.db, { principal, id: input.params.internId });
      // The stream's slot before the turn is counted, so a refused stream costs no turn.
      await holdSlot(ctx, req, reply, 'stream');
      if (action.kind === 'turn') await ctx.turnLimiter.consume(principal.subjectId);
      // A caller who leaves while its intern wakes gives up its place in the wake queue.
      const gone = new AbortController();
      const leave = () => gone.abort(clientClosed());
      reply.raw.once('close', leave);
      // A sleeping intern is woken here (hibernation.ts); the turn streams once it is up.
      let target: DaemonTarget | null = await ctx.fleet.target(row, principal.orgId, gone.signal);
      // The session's transcript is written as the request ends (docs/guides/sessions.md); a failed
      // write costs the transcript that part, never the turn.
      const record = {
        message:
          action.kind === 'turn'
            ? { prompt: action.body.prompt, mode: action.body.approval_mode ?? 'self-drive' }
            : { interactionId: action.interactionId, answer: action.answer },
        save: (sessionId: string, entries: Entry[]) =>
          void recordTranscript(ctx.store.db, { internId: row.id, sessionId, entries }).catch((err: unknown) =>
            ctx.log.warn({ err, intern_id: row.id }, 'a chat request ended without its transcript recorded'),
          ),
      };
      const open = (t: DaemonTarget) => () =>
        action.kind === 'turn' ? startTurn(t, action.body) : answerInteraction(t, action);
      for (let retried = false; ; retried = true) {
        const at: DaemonTarget = target;
        try {
          const result = await relay({
            res: reply.raw,
            timings,
            sessionId: action.kind === 'answer' ? action.sessionId : undefined,
            toolEvents,
            record,
            streams: ctx.streams,
            onEnd: (turn) =>
              ctx.broadcast.emitIfBroadcasting(row.workspaceId, () =>
                turnSpan({ ...turn, internId: row.id, internName: row.name, workspaceId: row.workspaceId }),
              ),
            open: open(at),
            onOpen: () => {
              reply.raw.off('close', leave);
              for (const [k, v] of Object.entries(reply.getHeaders()))
                if (v !== undefined) reply.raw.setHeader(k, v as string);
              reply.hijack();
              // node:http keeps a request's headers until its response ends; a stream may stay open
              // for minutes and nothing reads them after this point (about 0.5 KB per open stream).
              req.raw.rawHeaders.length = 0;
              req.raw.headers = {};
            },
          });
          reply.raw.off('close', leave);
          if (result.kind === 'steered') return reply.code(202).send(result.body);
          return reply;
        } catch (err) {
          // The daemon went to sleep between the record's read and this request (it refuses work
          // once it agreed to): retried once, on the daemon the wake starts. Nothing was streamed.
          const refused = daemonRefusedConnection(err);
          const how = refused
            ? 'refused'
            : err instanceof ApiError && err.reason === 'intern_not_ready'
              ? 'not_ready'
              : null;
          target = how && !retried ? await ctx.fleet.retarget(row.id, at, how, principal.orgId, gone.signal) : null;
          if (target) continue;
          reply.raw.off('close', leave);
          if (refused) ctx.interns.noticeRefused({ id: row.id, hostname: at.baseUrl });
          throw err;
        }
      }
    },
  });
};
