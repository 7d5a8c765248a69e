// Preset routes (docs/reference/api.md#presets: create from a body, list, get, versions), scoped to the
// key's workspace. Management key required. The slug is URL-safe (RFC 3986 unreserved characters), 1 to 100
// characters.
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, principalOf } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';
import { keyWorkspaceDeleted } from '../errors.ts';
import { managementRefusals, Pagination, PresetSlug } from '../http/common.schemas.ts';
import { Preset, PresetVersion, PresetWithVersion, VersionParam } from './presets.schemas.ts';
import { STYLES, type BodyStyle, type PresetDraft } from './preset-body.ts';
import {
  createPresetVersion,
  findPreset,
  findVersion,
  listPresets,
  listVersions,
  presetWithVersion,
  toPreset,
  toVersion,
} from './presets.ts';

const One = z.object({ data: PresetWithVersion });
const PATHS: Record<BodyStyle, string> = { messages: 'messages', chat: 'chat/completions', responses: 'responses' };
const SLUG = 'preset slug (letters, digits and . _ ~ -, 1 to 100 characters; case-sensitive)';
/** Creation checks the slug; reads look it up as given (an invalid one names no preset: 404). */
const NewSlug = z.object({ slug: PresetSlug.describe(SLUG) });
const Slug = z.object({ slug: z.string().describe(SLUG) });
const SlugVersion = z.object({
  slug: z.string().describe(SLUG),
  version: VersionParam.describe('version number, from 1'),
});
const common = { tags: ['presets'], guard: 'management' as const };

/** The key's workspace; a key without one (the account's default was deleted) cannot address presets. */
function workspaceOf(req: FastifyRequest): string {
  const workspaceId = principalOf(req).workspaceId;
  if (!workspaceId) throw keyWorkspaceDeleted('workspace');
  return workspaceId;
}
const before = (req: FastifyRequest) => void workspaceOf(req);

export const presetRoutes: RouteModule = (app, ctx) => {
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  /** One creation route per body style, its body typed by its own schema. */
  const draftRoute = <T>(style: BodyStyle, body: z.ZodType<T>, toDraft: (b: T) => PresetDraft) =>
    defineRoute(app, ctx, {
      ...common,
      method: 'POST',
      path: `/presets/:slug/${PATHS[style]}`,
      summary: `Create a preset or a new version of it from a ${style}-style request body`,
      params: NewSlug,
      body,
      onSend,
      before,
      responses: {
        200: { description: 'the preset with its new designated version', schema: One },
        ...managementRefusals(400, 401, 403, 404, 409, 500),
      },
      handler: async (req, _reply, input) => {
        const p = principalOf(req);
        const draft = toDraft(input.body);
        return {
          data: await createPresetVersion(db, {
            workspaceId: workspaceOf(req),
            slug: input.params.slug,
            orgId: p.orgId,
            userId: p.userId,
            draft,
          }),
        };
      },
    });
  draftRoute('messages', STYLES.messages.schema, STYLES.messages.toDraft);
  draftRoute('chat', STYLES.chat.schema, STYLES.chat.toDraft);
  draftRoute('responses', STYLES.responses.schema, STYLES.responses.toDraft);

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/presets',
    summary: "List the presets of the key's workspace",
    query: Pagination,
    before,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(Preset), total_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 500),
    },
    handler: async (req, _reply, { query }) => {
      const { rows, total } = await listPresets(db, { workspaceId: workspaceOf(req), ...query });
      return { data: rows.map(toPreset), total_count: total };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/presets/:slug',
    summary: 'Get a preset with its designated version',
    params: Slug,
    before,
    responses: { 200: { description: 'preset', schema: One }, ...managementRefusals(400, 401, 403, 404, 500) },
    handler: async (req, _reply, { params }) => ({
      data: await presetWithVersion(db, await findPreset(db, { workspaceId: workspaceOf(req), slug: params.slug })),
    }),
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/presets/:slug/versions',
    summary: 'List the versions of a preset, newest first',
    params: Slug,
    query: Pagination,
    before,
    responses: {
      200: { description: 'page', schema: z.object({ data: z.array(PresetVersion), total_count: z.number().int() }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params, query }) => {
      const { rows, total } = await listVersions(db, { workspaceId: workspaceOf(req), slug: params.slug, ...query });
      return { data: rows.map(toVersion), total_count: total };
    },
  });

  defineRoute(app, ctx, {
    ...common,
    method: 'GET',
    path: '/presets/:slug/versions/:version',
    summary: 'Get one version of a preset',
    params: SlugVersion,
    before,
    responses: {
      200: { description: 'version', schema: z.object({ data: PresetVersion }) },
      ...managementRefusals(400, 401, 403, 404, 500),
    },
    handler: async (req, _reply, { params }) => ({
      data: toVersion(
        await findVersion(db, { workspaceId: workspaceOf(req), slug: params.slug, version: params.version }),
      ),
    }),
  });
};
