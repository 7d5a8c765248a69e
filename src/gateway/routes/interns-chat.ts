// POST /interns/{internId}/chat/completions (SPEC §4.1): validates, resolves the intern's
// daemon from its record, counts the turn, and relays the run as an OpenAI-compatible stream.
import type { RouteModule } from '../app.ts';
import { guard, principalOf } from '../app.ts';
import { parseWith } from '../validate.ts';
import { ChatChunk, ChatRequest, SteeredResponse } from '../../schemas/intern-chat.ts';
import { LifecycleError } from '../../schemas/intern.ts';
import { chatAction } from '../../services/interns-chat.ts';
import { findInternForChat } from '../../services/interns.ts';
import { answerInteraction, daemonRefusedConnection, startTurn, type DaemonTarget } from '../../relay/client.ts';
import { ApiError } from '../../errors.ts';
import { relay } from '../../relay/relay.ts';
import { holdSlot } from '../slots.ts';

const CHAT_ERRORS = [400, 401, 403, 404, 408, 409, 410, 413, 429, 502, 503, 504];

export const internChatRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'interns');
  // One object for every stream of this route (an open stream keeps a reference).
  const timings = { keepaliveMs: ctx.config.keepaliveMs, routeDeadlineMs: ctx.config.routeDeadlineMs, turnBudgetMs: ctx.config.turnBudgetMs };

  ctx.docs.add({
    method: 'post',
    path: '/interns/:internId/chat/completions',
    summary: 'Chat with an intern: an OpenAI-compatible SSE stream that can pause for a permission or an answer',
    tags: ['interns'],
    params: { internId: 'intern id' },
    body: ChatRequest,
    responses: {
      200: { description: 'SSE stream of chat.completion.chunk events, then data: [DONE]', schema: ChatChunk, contentType: 'text/event-stream' },
      202: { description: 'delivered into the running turn of this session', schema: SteeredResponse },
      ...Object.fromEntries(CHAT_ERRORS.map((c) => [c, { description: 'refusal', schema: LifecycleError }])),
    },
  });

  app.post<{ Params: { internId: string } }>('/interns/:internId/chat/completions', { onRequest, config: { errorStyle: 'chat' } }, async (req, reply) => {
    const principal = principalOf(req);
    const action = chatAction(parseWith(ChatRequest, req.body));
    // Fastify keeps the request until the response ends; a stream may stay open for minutes and
    // the body may be a 1 MiB history, of which the action keeps only the last message.
    req.body = null;
    const row = await findInternForChat(ctx.store.db, { principal, id: req.params.internId });
    // The stream's slot before the turn is counted, so a refused stream costs no turn.
    await holdSlot(ctx, req, reply, 'stream');
    if (action.kind === 'turn') await ctx.turnLimiter.consume(principal.subjectId);
    // A caller who leaves while its intern wakes gives up its place in the wake queue.
    const gone = new AbortController();
    const leave = () => gone.abort(new ApiError({ status: 499, reason: 'client_closed_request', message: 'the client closed the request' }));
    reply.raw.once('close', leave);
    // A sleeping intern is woken here (fleet/hibernation.ts); the turn streams once it is up.
    let target: DaemonTarget | null = await ctx.fleet.target(row, principal.orgId, gone.signal);
    const open = (t: DaemonTarget) => () => (action.kind === 'turn' ? startTurn(t, action.body) : answerInteraction(t, action));
    for (let retried = false; ; retried = true) {
      const at: DaemonTarget = target;
      try {
        const result = await relay({
          res: reply.raw,
          timings,
          sessionId: action.kind === 'answer' ? action.sessionId : undefined,
          streams: ctx.streams,
          open: open(at),
          onOpen: () => {
            reply.raw.off('close', leave);
            for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) reply.raw.setHeader(k, v as string);
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
        const how = refused ? 'refused' : err instanceof ApiError && err.reason === 'intern_not_ready' ? 'not_ready' : null;
        target = how && !retried ? await ctx.fleet.retarget(row.id, at, how, principal.orgId, gone.signal) : null;
        if (target) continue;
        reply.raw.off('close', leave);
        if (refused) ctx.interns.noticeRefused({ id: row.id, hostname: at.baseUrl });
        throw err;
      }
    }
  });
};
