// The daemon's routes (docs/daemon-protocol.md), one definition each: method, path (`:name`
// segments are its parameters, given decoded), whether it is open without the secret, its body's
// schema with the refusal a bad body gets, and a handler that answers with a Result of the Intern
// (a stream, a steering acknowledgement, a refusal) or a JSON reply. http.ts reads, authorizes,
// validates and writes; every decision stays the Intern's.
import type { z } from 'zod';
import {
  AnswerRequest,
  DAEMON_PROTOCOL_VERSION,
  HibernateRequest,
  TurnRequest,
  daemonPaths,
} from '../../shared/daemon-protocol.ts';
import type { Intern, Result } from './intern.ts';
import { refusal } from './results.ts';
import type { Sink } from './run.ts';

export type Reply = Result | { kind: 'json'; status: number; body: unknown };

export type Call<B> = {
  params: Record<string, string>;
  query: URLSearchParams;
  body: B extends z.ZodType ? z.output<B> : undefined;
  /** The response as a stream of run events (its headers go with the first event). */
  sink: () => Sink;
};

export type DaemonRoute<B extends z.ZodType | undefined = z.ZodType | undefined> = {
  method: 'GET' | 'POST';
  path: string;
  /** Answered without the daemon's secret (health only). */
  open?: boolean;
  body?: B;
  /** The bad_request message for a body that does not parse; by default each issue, naming its field. */
  badBody?: string;
  handler: (call: Call<B>) => Reply | Promise<Reply>;
};

const route = <B extends z.ZodType | undefined = undefined>(r: DaemonRoute<B>) => r as unknown as DaemonRoute;
const json = (body: unknown, status = 200): Reply => ({ kind: 'json', status, body });

export function daemonRoutes(intern: Intern): DaemonRoute[] {
  const cancel = (by: 'runs' | 'sessions') =>
    route({
      method: 'POST',
      path: `/v1/${by}/:id/cancel`,
      handler: async ({ params: { id } }) => {
        const run = await intern.cancel(by === 'runs' ? { runId: id! } : { sessionId: id! });
        if (!run) return refusal('run_not_found', by === 'runs' ? `no run ${id}` : `no live run in session ${id}`);
        return json({ run_id: run.id, session_id: run.sessionId, phase: run.state.phase });
      },
    });
  return [
    route({
      method: 'GET',
      path: daemonPaths.health,
      open: true,
      handler: () => json({ status: 'ok', protocol: DAEMON_PROTOCOL_VERSION }),
    }),
    route({ method: 'GET', path: daemonPaths.status, handler: () => json(intern.status()) }),
    route({
      method: 'POST',
      path: daemonPaths.turns,
      body: TurnRequest,
      handler: ({ body, sink }) => intern.startTurn(body, sink()),
    }),
    route({
      method: 'POST',
      path: '/v1/sessions/:session/interactions/:interaction',
      body: AnswerRequest,
      badBody: 'body must be {"answer": string}',
      handler: ({ params, body, sink }) => intern.answer(params.session!, params.interaction!, body.answer, sink()),
    }),
    route({
      method: 'GET',
      path: '/v1/runs/:run/events',
      handler: ({ params, query, sink }) => {
        const after = Number(query.get('after') ?? 0);
        if (!Number.isInteger(after) || after < 0)
          return refusal('bad_request', 'after must be a non-negative integer');
        return intern.attach(params.run!, after, sink());
      },
    }),
    route({
      method: 'POST',
      path: daemonPaths.hibernate,
      body: HibernateRequest,
      badBody: 'body must be {"idle_ms": integer >= 0}',
      handler: ({ body }) => {
        const r = intern.hibernate(body.idle_ms);
        return r.kind === 'refusal' ? r : json({ hibernating: true });
      },
    }),
    cancel('runs'),
    cancel('sessions'),
  ];
}

export type Matcher = (method: string, path: string) => { route: DaemonRoute; params: Record<string, string> } | null;

/** Finds the route of a request, its path parameters as sent (still URI-encoded). */
export function matcher(routes: DaemonRoute[]): Matcher {
  const compiled = routes.map((r) => {
    const names = [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    return { route: r, names, re: new RegExp(`^${r.path.replace(/:\w+/g, '([^/]+)')}$`) };
  });
  return (method, path) => {
    for (const c of compiled) {
      const m = c.route.method === method ? c.re.exec(path) : null;
      if (m) return { route: c.route, params: Object.fromEntries(c.names.map((n, i) => [n, m[i + 1]!])) };
    }
    return null;
  };
}
