// The configuration that routes a workspace's model requests (its row, its provider credentials
// still sealed, its presets' designated versions), read in one round trip per kind and cached
// for a few seconds (COHORT_ROUTING_CACHE_MS) so the hot path does no database work. Changes
// made through this process's management routes are seen after at most that TTL.
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { byokCredentials, presets, presetVersions, workspaces } from '../store/schema.ts';
import { resourceNotFound } from '../errors.ts';

export type WorkspaceRow = typeof workspaces.$inferSelect;
export type CredentialRow = typeof byokCredentials.$inferSelect;
export type PresetVersion = { systemPrompt: string; config: Record<string, unknown> };

export type WorkspaceRouting = {
  workspace: WorkspaceRow | null;
  /** Credentials by provider slug, in creation order. */
  credentials: ReadonlyMap<string, CredentialRow[]>;
};

export type RoutingConfig = {
  workspace(opts: { orgId: string; workspaceId: string | null }): Promise<WorkspaceRouting>;
  /** The designated version of a workspace's preset; 404 when there is none. */
  preset(opts: { workspaceId: string | null; slug: string }): Promise<PresetVersion>;
  invalidate(): void;
};

const MAX_ENTRIES = 10_000;
const NONE: WorkspaceRouting = { workspace: null, credentials: new Map() };

/** A TTL cache of promises, so concurrent misses share one read and failures are not kept. */
function ttlCache<T>(ttlMs: number, now: () => number) {
  const entries = new Map<string, { value: Promise<T>; expires: number }>();
  return {
    get(key: string, load: () => Promise<T>): Promise<T> {
      const hit = entries.get(key);
      if (hit && hit.expires > now()) return hit.value;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      const value = load();
      entries.set(key, { value, expires: now() + ttlMs });
      value.catch(() => entries.delete(key));
      return value;
    },
    clear: () => entries.clear(),
  };
}

export function createRoutingConfig(opts: { db: Db; ttlMs: number; now?: () => number }): RoutingConfig {
  const { db } = opts;
  const now = opts.now ?? Date.now;
  const spaces = ttlCache<WorkspaceRouting>(opts.ttlMs, now);
  const versions = ttlCache<PresetVersion | null>(opts.ttlMs, now);

  async function loadWorkspace(orgId: string, workspaceId: string): Promise<WorkspaceRouting> {
    const [[workspace], creds] = await Promise.all([
      db
        .select()
        .from(workspaces)
        .where(and(eq(workspaces.id, workspaceId), eq(workspaces.orgId, orgId)))
        .limit(1),
      db
        .select()
        .from(byokCredentials)
        .where(eq(byokCredentials.workspaceId, workspaceId))
        .orderBy(asc(byokCredentials.createdAt), asc(byokCredentials.id)),
    ]);
    if (!workspace) return NONE;
    const credentials = new Map<string, CredentialRow[]>();
    for (const c of creds) credentials.set(c.provider, [...(credentials.get(c.provider) ?? []), c]);
    return { workspace, credentials };
  }

  async function loadPreset(workspaceId: string, slug: string): Promise<PresetVersion | null> {
    const [row] = await db
      .select({ systemPrompt: presetVersions.systemPrompt, config: presetVersions.config })
      .from(presets)
      .innerJoin(presetVersions, eq(presetVersions.id, presets.designatedVersionId))
      .where(and(eq(presets.workspaceId, workspaceId), eq(presets.slug, slug)))
      .limit(1);
    return row ?? null;
  }

  return {
    workspace: ({ orgId, workspaceId }) =>
      workspaceId ? spaces.get(workspaceId, () => loadWorkspace(orgId, workspaceId)) : Promise.resolve(NONE),
    async preset({ workspaceId, slug }) {
      const v = workspaceId
        ? await versions.get(`${workspaceId}\u0000${slug}`, () => loadPreset(workspaceId, slug))
        : null;
      if (!v) throw resourceNotFound(`preset ${slug}`);
      return v;
    },
    invalidate() {
      spaces.clear();
      versions.clear();
    },
  };
}
