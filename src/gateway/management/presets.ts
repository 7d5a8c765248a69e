// Presets of a workspace and their versions: create a version from a draft (creating the preset
// on first use), read, list, and load the designated version for inference (`@preset/<slug>`).
import { randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, max } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { presets, presetVersions } from '../store/schema.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../store/errors.ts';
import { keyWorkspaceDeleted, resourceConflict, resourceNotFound } from '../errors.ts';
import type { Preset, PresetVersion, PresetWithVersion } from './presets.schemas.ts';
import type { PresetConfig } from './preset-config.schemas.ts';
import type { PresetDraft } from './preset-body.ts';

type PresetRow = typeof presets.$inferSelect;
type VersionRow = typeof presetVersions.$inferSelect;
export type Scope = { workspaceId: string; slug: string };

const ATTEMPTS = 3;

export function toVersion(v: VersionRow): PresetVersion {
  return {
    id: v.id,
    preset_id: v.presetId,
    version: v.version,
    system_prompt: v.systemPrompt,
    config: v.config as PresetConfig,
    creator_id: v.creatorId,
    created_at: v.createdAt.toISOString(),
    updated_at: v.updatedAt.toISOString(),
  };
}

export function toPreset(p: PresetRow): Preset {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    status: p.status as Preset['status'],
    status_updated_at: p.statusUpdatedAt?.toISOString() ?? null,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
    creator_user_id: p.creatorUserId,
    workspace_id: p.workspaceId,
    designated_version_id: p.designatedVersionId,
  };
}

/** One transaction: the preset row (created if missing) is locked, so concurrent creates queue and
 * take consecutive versions; the unique (preset_id, version) constraint backs that up, and a create
 * that still collides is retried, then refused with the documented 409 (docs/reference/api.md#presets). */
async function addVersion(
  db: Db,
  opts: Scope & { orgId: string; userId: string; draft: PresetDraft },
): Promise<PresetWithVersion> {
  return db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    const now = new Date();
    await tx
      .insert(presets)
      .values({
        id: randomUUID(),
        orgId: opts.orgId,
        workspaceId: opts.workspaceId,
        slug: opts.slug,
        name: opts.slug,
        creatorUserId: opts.userId,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing();
    const [preset] = await tx
      .select()
      .from(presets)
      .where(and(eq(presets.workspaceId, opts.workspaceId), eq(presets.slug, opts.slug)))
      .for('update');
    if (!preset) throw resourceConflict();
    const [top] = await tx
      .select({ v: max(presetVersions.version) })
      .from(presetVersions)
      .where(eq(presetVersions.presetId, preset.id));
    const [version] = await tx
      .insert(presetVersions)
      .values({
        id: randomUUID(),
        presetId: preset.id,
        version: (top?.v ?? 0) + 1,
        systemPrompt: opts.draft.systemPrompt,
        config: opts.draft.config,
        creatorId: opts.userId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    const [updated] = await tx
      .update(presets)
      .set({ designatedVersionId: version!.id, updatedAt: now })
      .where(eq(presets.id, preset.id))
      .returning();
    return { ...toPreset(updated!), designated_version: toVersion(version!) };
  });
}

export async function createPresetVersion(
  db: Db,
  opts: Scope & { orgId: string; userId: string; draft: PresetDraft },
): Promise<PresetWithVersion> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await addVersion(db, opts);
    } catch (err) {
      // The key's workspace was deleted after the key was resolved (a cached resolution, or a race).
      if (isForeignKeyViolation(err, 'workspace_id')) throw keyWorkspaceDeleted('workspace');
      if (!isUniqueViolation(err) || attempt >= ATTEMPTS) throw isUniqueViolation(err) ? resourceConflict() : err;
    }
  }
}

export async function findPreset(db: Db, opts: Scope): Promise<PresetRow> {
  const [row] = await db
    .select()
    .from(presets)
    .where(and(eq(presets.workspaceId, opts.workspaceId), eq(presets.slug, opts.slug)))
    .limit(1);
  if (!row) throw resourceNotFound('preset');
  return row;
}

export async function presetWithVersion(db: Db, p: PresetRow): Promise<PresetWithVersion> {
  const [v] = p.designatedVersionId
    ? await db.select().from(presetVersions).where(eq(presetVersions.id, p.designatedVersionId)).limit(1)
    : [];
  return { ...toPreset(p), designated_version: v ? toVersion(v) : null };
}

export async function listPresets(db: Db, opts: { workspaceId: string; offset: number; limit: number }) {
  const where = eq(presets.workspaceId, opts.workspaceId);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(presets)
      .where(where)
      .orderBy(asc(presets.createdAt), asc(presets.id))
      .offset(opts.offset)
      .limit(opts.limit),
    db.select({ n: count() }).from(presets).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** Versions newest first. */
export async function listVersions(db: Db, opts: Scope & { offset: number; limit: number }) {
  const preset = await findPreset(db, opts);
  const where = eq(presetVersions.presetId, preset.id);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(presetVersions)
      .where(where)
      .orderBy(desc(presetVersions.version))
      .offset(opts.offset)
      .limit(opts.limit),
    db.select({ n: count() }).from(presetVersions).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function findVersion(db: Db, opts: Scope & { version: number }): Promise<VersionRow> {
  const preset = await findPreset(db, opts);
  const [row] = await db
    .select()
    .from(presetVersions)
    .where(and(eq(presetVersions.presetId, preset.id), eq(presetVersions.version, opts.version)))
    .limit(1);
  if (!row) throw resourceNotFound('preset version');
  return row;
}
