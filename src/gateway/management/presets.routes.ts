// Preset routes (SPEC §4.4, plus list, get and versions), scoped to the key's workspace.
// Management key required. The slug is URL-safe (RFC 3986 unreserved characters), 1 to 100 characters.
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { RouteModule } from '../http/app.ts';
import { dropsRoutingCache, guard, principalOf } from '../http/app.ts';
import { parseWith } from '../http/validate.ts';
import { keyWorkspaceDeleted } from '../errors.ts';
import { ManagementError, Pagination, PresetSlug } from '../http/common.schemas.ts';
import { Preset, PresetVersion, PresetWithVersion, VersionParam } from './presets.schemas.ts';
import { STYLES, type BodyStyle } from './preset-body.ts';
import { createPresetVersion, findPreset, findVersion, listPresets, listVersions, presetWithVersion, toPreset, toVersion } from './presets.ts';

const One = z.object({ data: PresetWithVersion });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, { description: 'error', schema: ManagementError }]));
const slugParam = { slug: 'preset slug (letters, digits and . _ ~ -, 1 to 100 characters; case-sensitive)' };
const PATHS: Record<BodyStyle, string> = { messages: 'messages', chat: 'chat/completions', responses: 'responses' };

const SlugParam = z.object({ slug: PresetSlug });
const VersionParams = z.object({ version: VersionParam });

/** The key's workspace; a key without one (the account's default was deleted) cannot address presets. */
function workspaceOf(req: FastifyRequest): string {
  const workspaceId = principalOf(req).workspaceId;
  if (!workspaceId) throw keyWorkspaceDeleted('workspace');
  return workspaceId;
}
const scopeOf = (req: FastifyRequest<{ Params: { slug: string } }>) => ({ workspaceId: workspaceOf(req), slug: req.params.slug });

export const presetRoutes: RouteModule = (app, ctx) => {
  const onRequest = guard(ctx, 'management');
  const onSend = dropsRoutingCache(ctx);
  const db = ctx.store.db;

  for (const style of Object.keys(PATHS) as BodyStyle[]) {
    const { schema, toDraft } = STYLES[style];
    const path = `/presets/:slug/${PATHS[style]}`;
    ctx.docs.add({ method: 'post', path, summary: `Create a preset or a new version of it from a ${style}-style request body`, tags: ['presets'], params: slugParam, body: schema, responses: { 200: { description: 'the preset with its new designated version', schema: One }, ...errors(400, 401, 403, 404, 409, 500) } });
    app.post<{ Params: { slug: string } }>(path, { onRequest, onSend }, async (req) => {
      const scope = scopeOf(req);
      parseWith(SlugParam, req.params);
      const draft = toDraft(parseWith(schema, req.body) as never);
      const p = principalOf(req);
      return { data: await createPresetVersion(db, { ...scope, orgId: p.orgId, userId: p.userId, draft }) };
    });
  }

  ctx.docs.add({ method: 'get', path: '/presets', summary: "List the presets of the key's workspace", tags: ['presets'], responses: { 200: { description: 'page', schema: z.object({ data: z.array(Preset), total_count: z.number().int() }) }, ...errors(400, 401, 403, 500) } });
  app.get('/presets', { onRequest }, async (req) => {
    const page = parseWith(Pagination, req.query);
    const { rows, total } = await listPresets(db, { workspaceId: workspaceOf(req), ...page });
    return { data: rows.map(toPreset), total_count: total };
  });

  ctx.docs.add({ method: 'get', path: '/presets/:slug', summary: 'Get a preset with its designated version', tags: ['presets'], params: slugParam, responses: { 200: { description: 'preset', schema: One }, ...errors(400, 401, 403, 404, 500) } });
  app.get<{ Params: { slug: string } }>('/presets/:slug', { onRequest }, async (req) => ({ data: await presetWithVersion(db, await findPreset(db, scopeOf(req))) }));

  ctx.docs.add({ method: 'get', path: '/presets/:slug/versions', summary: 'List the versions of a preset, newest first', tags: ['presets'], params: slugParam, responses: { 200: { description: 'page', schema: z.object({ data: z.array(PresetVersion), total_count: z.number().int() }) }, ...errors(400, 401, 403, 404, 500) } });
  app.get<{ Params: { slug: string } }>('/presets/:slug/versions', { onRequest }, async (req) => {
    const page = parseWith(Pagination, req.query);
    const { rows, total } = await listVersions(db, { ...scopeOf(req), ...page });
    return { data: rows.map(toVersion), total_count: total };
  });

  ctx.docs.add({ method: 'get', path: '/presets/:slug/versions/:version', summary: 'Get one version of a preset', tags: ['presets'], params: { ...slugParam, version: 'version number, from 1' }, responses: { 200: { description: 'version', schema: z.object({ data: PresetVersion }) }, ...errors(400, 401, 403, 404, 500) } });
  app.get<{ Params: { slug: string; version: string } }>('/presets/:slug/versions/:version', { onRequest }, async (req) => {
    const { version } = parseWith(VersionParams, req.params);
    return { data: toVersion(await findVersion(db, { ...scopeOf(req), version })) };
  });
};
