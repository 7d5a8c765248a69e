// An intern's work folder over HTTP (docs/guides/files.md), for whoever may chat with the intern:
// GET reads a file (raw bytes) or lists a folder (JSON), PUT writes a file from the raw body,
// DELETE removes, POST …/files-move renames; `?format=tar` takes a folder in or out as a tar
// stream. Paths are relative to the work folder /intern/work. POST …/repositories gives a running
// intern a git repository, cloned by the gateway (repositories.ts, docs/guides/repositories.md). Bodies are streamed to a spool file
// under the files API's own bound (COHORT_FILES_MAX_MB), not the JSON routes' 1 MiB.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { refusals } from '../http/openapi.ts';
import type { Ctx } from '../context.ts';
import { clientClosed } from '../errors.ts';
import { LifecycleError } from './interns.schemas.ts';
import { findInternForChat } from './interns.ts';
import { bodyTooLarge, checkedPath } from './files-checks.ts';
import { Repository } from './repositories.schemas.ts';

const errors = (...codes: number[]) => refusals(LifecycleError, ...codes);
const common = { tags: ['files'], guard: 'interns' as const, errorStyle: 'chat' as const };
const Id = z.object({ id: z.string().describe('intern id') });
const Params = Id.extend({ '*': z.string().describe("a path relative to the intern's work folder /intern/work") });
/** The work folder itself (`…/files`), or a path in it (`…/files/*`). */
const paths = [
  ['/interns/:id/files', Id],
  ['/interns/:id/files/*', Params],
] as const;
/** PUT's body, passed on unparsed (this module's own content-type parser). */
const RawBody = z
  .custom<Readable>((v) => v instanceof Readable)
  .optional()
  .describe("the file's bytes; with ?format=tar, an uncompressed tar stream of files and folders");
const Format = z.strictObject({
  format: z
    .enum(['tar'])
    .optional()
    .describe('tar: the folder at the path as a tar stream (GET) or unpacked into it (PUT)'),
});
const Entry = z.object({
  name: z.string(),
  type: z.enum(['file', 'directory', 'symlink', 'special']),
  size: z.number().int().nullable(),
  modified_at: z.number().int(),
});
const Listing = z.object({
  path: z.string(),
  type: z.literal('directory'),
  entries: z.array(Entry),
  truncated: z.boolean().describe('more entries than COHORT_FILES_MAX_ENTRIES: the first by name'),
});
const Written = z.object({
  path: z.string(),
  type: z.enum(['file', 'directory']),
  size: z.number().int().optional(),
  created: z.boolean().optional(),
});
const Placed = z.object({
  id: z.string(),
  url: z.string(),
  ref: z.string().describe('the branch checked out'),
  path: z.string().describe('its folder in the work folder'),
  commit: z.string().describe('the commit checked out (the base of the intern’s work)'),
});
const Work = z.object({
  id: z.string(),
  path: z.string(),
  base: z.string().describe('the commit the intern was given'),
  commit: z.string().describe("the intern's HEAD, as taken from its bundle"),
});
const Move = z.strictObject({
  from: z.string().min(1).describe('a path relative to the work folder'),
  to: z.string().min(1).describe('where it goes; must not exist'),
});

/** A signal that fires when the caller goes away (it then gives up its place in a wake queue). */
function goneSignal(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort(clientClosed()));
  return gone.signal;
}

const rowFor = (ctx: Ctx, req: FastifyRequest, id: string) =>
  findInternForChat(ctx.store.db, { principal: principalOf(req), id });

export const internFileRoutes: RouteModule = (app, ctx) => {
  readRoutes(app, ctx);
  writeRoutes(app, ctx);
  removeRoute(app, ctx);
  repositoryRoutes(app, ctx);
  workRoutes(app, ctx);
  moveRoute(app, ctx);
};

/** GET of a file, a folder's listing, or a folder's tar. */
const readRoutes: RouteModule = (app, ctx) => {
  for (const [path, params] of paths)
    defineRoute(app, ctx, {
      ...common,
      method: 'GET',
      path,
      summary: 'Read a file of the intern (raw bytes), list a folder (JSON), or download a folder (?format=tar)',
      params,
      query: Format,
      responses: {
        200: {
          description: 'a listing; a file is application/octet-stream, a folder with ?format=tar application/x-tar',
          schema: Listing,
        },
        ...errors(400, 401, 403, 404, 409, 413, 500),
      },
      handler: async (req, reply, { params, query }) => {
        const rel = checkedPath('*' in params ? params['*'] : '');
        const got = await ctx.files.get(await rowFor(ctx, req, params.id), rel, { tar: query.format === 'tar' });
        if (got.type === 'directory') return got.body;
        reply
          .type(got.type === 'tar' ? 'application/x-tar' : 'application/octet-stream')
          .header('x-content-type-options', 'nosniff')
          .header('content-disposition', 'attachment');
        if (got.type === 'file') return reply.header('content-length', got.size).send(got.stream);
        // Written by the download itself, which reuses each buffer once the response has written it.
        for (const [k, v] of Object.entries(reply.getHeaders()))
          if (v !== undefined) reply.raw.setHeader(k, v as string);
        reply.hijack();
        reply.raw.writeHead(200);
        got.download.send(reply.raw);
        return reply;
      },
    });
};

/** PUT of a file or a folder's tar. It takes any body as bytes: its own scope, where every
 * content type is passed on as a stream. */
const writeRoutes: RouteModule = (app, ctx) => {
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    for (const [path, params] of paths)
      defineRoute(raw, ctx, {
        ...common,
        method: 'PUT',
        path,
        summary: 'Write a file of the intern from the raw body, or (?format=tar) unpack a tar stream into a folder',
        params,
        query: Format,
        body: RawBody,
        bodyType: 'application/octet-stream',
        responses: {
          200: { description: 'written', schema: Written },
          ...errors(400, 401, 403, 404, 409, 413, 500, 502, 503),
        },
        handler: async (req, reply, { params, query, body }) => {
          const rel = checkedPath('*' in params ? params['*'] : '');
          const principal = principalOf(req);
          const row = await rowFor(ctx, req, params.id);
          try {
            if (Number(req.headers['content-length'] ?? 0) > ctx.config.files.maxBytes)
              throw bodyTooLarge(ctx.config.files.maxBytes);
            return await ctx.files.put(row, rel, body, {
              tar: query.format === 'tar',
              account: principal.orgId,
              signal: goneSignal(reply),
            });
          } catch (err) {
            // A refused upload may still be arriving (one that never ends): the connection goes
            // with the answer instead of reading the rest.
            reply.header('connection', 'close');
            throw err;
          }
        },
      });
  });
};

const removeRoute: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    ...common,
    method: 'DELETE',
    path: '/interns/:id/files/*',
    summary: 'Remove a file, a link (never what it names) or a folder with everything in it',
    params: Params,
    responses: {
      200: {
        description: 'removed',
        schema: z.object({ path: z.string(), type: z.string(), deleted: z.literal(true) }),
      },
      ...errors(400, 401, 403, 404, 409, 500, 502, 503),
    },
    handler: async (req, reply, { params }) => {
      const rel = checkedPath(params['*'] ?? '');
      const row = await rowFor(ctx, req, params.id);
      const r = await ctx.files.remove(row, rel, { account: principalOf(req).orgId, signal: goneSignal(reply) });
      return { ...r, deleted: true as const };
    },
  });
};

/** A repository given to the intern, and the list of those it has. */
const repositoryRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    ...common,
    tags: ['repositories'],
    method: 'POST',
    path: '/interns/:id/repositories',
    summary: "Clone a git repository into the intern's work folder (a sleeping intern is woken)",
    params: Id,
    body: Repository,
    responses: {
      201: { description: 'placed', schema: Placed },
      ...errors(400, 401, 403, 404, 409, 413, 500, 502, 503),
    },
    handler: async (req, reply, { params, body }) => {
      const row = await rowFor(ctx, req, params.id);
      const [placed] = await ctx.files.addRepositories(row, [body], {
        account: principalOf(req).orgId,
        signal: goneSignal(reply),
        created: false,
        field: 'body',
      });
      return reply.code(201).send(placed);
    },
  });

  defineRoute(app, ctx, {
    ...common,
    tags: ['repositories'],
    method: 'GET',
    path: '/interns/:id/repositories',
    summary: 'The repositories the intern was given, each with its base commit',
    params: Id,
    responses: {
      200: { description: 'list', schema: z.object({ data: z.array(Placed) }) },
      ...errors(401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => ({
      data: await ctx.files.listRepositories(await rowFor(ctx, req, params.id)),
    }),
  });
};

const RepoParams = Id.extend({ repo: z.string().max(64).describe('repository id') });

/** The intern's work in a repository: its diff, and its push to a new branch. */
const workRoutes: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    ...common,
    tags: ['repositories'],
    method: 'GET',
    path: '/interns/:id/repositories/:repo/diff',
    summary: "The intern's committed work in a repository against its base commit (a sleeping intern is woken)",
    params: RepoParams,
    responses: {
      200: { description: 'the diff', schema: Work.extend({ diff: z.string().describe('git diff base..commit') }) },
      ...errors(401, 403, 404, 409, 500, 502, 503),
    },
    handler: async (req, reply, { params }) =>
      ctx.files.diff(await rowFor(ctx, req, params.id), params.repo, {
        account: principalOf(req).orgId,
        signal: goneSignal(reply),
      }),
  });

  defineRoute(app, ctx, {
    ...common,
    tags: ['repositories'],
    method: 'POST',
    path: '/interns/:id/repositories/:repo/push',
    summary: "Push the intern's committed work in a repository to a new branch of the remote",
    params: RepoParams,
    body: z
      .strictObject({
        branch: z.string().min(1).max(200).optional().describe('a new branch; default cohort/<intern name>-<time>'),
      })
      .optional(),
    responses: {
      200: { description: 'pushed', schema: Work.extend({ branch: z.string() }) },
      ...errors(400, 401, 403, 404, 409, 500, 502, 503),
    },
    handler: async (req, reply, { params, body }) =>
      ctx.files.push(await rowFor(ctx, req, params.id), params.repo, {
        account: principalOf(req).orgId,
        signal: goneSignal(reply),
        branch: body?.branch,
      }),
  });
};

const moveRoute: RouteModule = (app, ctx) => {
  defineRoute(app, ctx, {
    ...common,
    method: 'POST',
    path: '/interns/:id/files-move',
    summary: 'Move (rename) a file or folder of the intern; the target must not exist',
    params: z.object({ id: z.string().describe('intern id') }),
    body: Move,
    responses: {
      200: { description: 'moved', schema: z.object({ from: z.string(), to: z.string(), type: z.string() }) },
      ...errors(400, 401, 403, 404, 409, 500, 502, 503),
    },
    handler: async (req, reply, { params, body }) => {
      const from = checkedPath(body.from);
      const to = checkedPath(body.to);
      const row = await rowFor(ctx, req, params.id);
      return ctx.files.move(row, from, to, { account: principalOf(req).orgId, signal: goneSignal(reply) });
    },
  });
};
