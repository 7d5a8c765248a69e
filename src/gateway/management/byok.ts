// Provider credentials (BYOK) of an account: create, read, update, delete, and the mapping to the
// API shape. The raw key is sealed (AES-256-GCM, bound to the credential id) before it reaches the
// database and is only ever unsealed in memory, by the inference router, for the call that uses it.
import { randomUUID } from 'node:crypto';
import { and, asc, count, eq, max } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Sealer } from '../crypto/seal.ts';
import { maskSecret } from '../crypto/keys.ts';
import { byokCredentials, organizations, workspaces } from '../store/schema.ts';
import { isForeignKeyViolation } from '../store/errors.ts';
import { keyHashesOf } from '../access/identity-store.ts';
import { defaultWorkspaceDeleted, invalidRequest, resourceNotFound } from '../errors.ts';
import { BYOK_ONLY_WITH_FALLBACK, type ByokCredential, type CreateByok, type UpdateByok } from './byok.schemas.ts';

type Row = typeof byokCredentials.$inferSelect;
type Account = { orgId: string };

export function toCredential(r: Row): ByokCredential {
  return {
    id: r.id,
    name: r.name,
    provider: r.provider as ByokCredential['provider'],
    label: r.label,
    workspace_id: r.workspaceId,
    created_at: r.createdAt.toISOString(),
    disabled: r.disabled,
    is_byok_only: r.isByokOnly,
    is_fallback: r.isFallback,
    is_required: r.isRequired,
    declared_zdr: r.declaredZdr,
    sort_order: r.sortOrder,
    allowed_api_key_hashes: r.allowedApiKeyHashes ?? null,
    allowed_models: r.allowedModels ?? null,
    allowed_user_ids: r.allowedUserIds ?? null,
  };
}

const unique = <T>(xs: T[] | null | undefined) => (xs ? [...new Set(xs)] : xs);

/** `allowed_api_key_hashes` may only name live keys of the account. */
async function checkHashes(db: Db, orgId: string, hashes: string[] | null | undefined) {
  if (!hashes) return;
  const owned = await keyHashesOf(db, orgId);
  const i = hashes.findIndex((h) => !owned.has(h));
  if (i >= 0) throw invalidRequest(`allowed_api_key_hashes.${i}: not the hash of a key of this account`);
}

const noSuchWorkspace = () => invalidRequest('workspace_id: no such workspace in this account');

/** The account's default workspace (docs/reference/api.md#provider-credentials), read from the
 * store rather than the key cache so a default deleted a moment ago, in any gateway, is already seen. */
async function defaultWorkspace(db: Db, orgId: string): Promise<string> {
  const [ws] = await db
    .select({ id: workspaces.id })
    .from(organizations)
    .innerJoin(workspaces, eq(workspaces.id, organizations.defaultWorkspaceId))
    .where(eq(organizations.id, orgId))
    .limit(1);
  if (!ws) throw defaultWorkspaceDeleted();
  return ws.id;
}

/** The credential's workspace: the given one (of this account), else the account's default. */
async function resolveWorkspace(db: Db, opts: Account & { given?: string }): Promise<string> {
  if (!opts.given) return defaultWorkspace(db, opts.orgId);
  const [ws] = await db
    .select({ id: workspaces.id })
    .from(workspaces)
    .where(and(eq(workspaces.id, opts.given.toLowerCase()), eq(workspaces.orgId, opts.orgId)))
    .limit(1);
  if (!ws) throw noSuchWorkspace();
  return ws.id;
}

export async function createCredential(db: Db, sealer: Sealer, opts: Account & { body: CreateByok }): Promise<Row> {
  const b = opts.body;
  const workspaceId = await resolveWorkspace(db, { orgId: opts.orgId, given: b.workspace_id });
  await checkHashes(db, opts.orgId, b.allowed_api_key_hashes);
  const [last] = await db
    .select({ n: max(byokCredentials.sortOrder) })
    .from(byokCredentials)
    .where(and(eq(byokCredentials.workspaceId, workspaceId), eq(byokCredentials.provider, b.provider)));
  const id = randomUUID();
  try {
    const [row] = await db
      .insert(byokCredentials)
      .values({
        id,
        orgId: opts.orgId,
        workspaceId,
        name: b.name ?? null,
        provider: b.provider,
        label: maskSecret(b.key),
        sealedKey: sealer.seal(b.key, id),
        disabled: b.disabled ?? false,
        isByokOnly: b.is_byok_only ?? false,
        isFallback: b.is_fallback ?? false,
        isRequired: b.is_required ?? false,
        declaredZdr: b.declared_zdr ?? null,
        sortOrder: b.sort_order ?? (last?.n == null ? 0 : last.n + 1),
        allowedApiKeyHashes: unique(b.allowed_api_key_hashes) ?? null,
        allowedModels: unique(b.allowed_models) ?? null,
        allowedUserIds: unique(b.allowed_user_ids) ?? null,
      })
      .returning();
    return row!;
  } catch (err) {
    // The workspace was deleted after it was resolved above.
    if (isForeignKeyViolation(err, 'workspace_id'))
      throw b.workspace_id ? noSuchWorkspace() : defaultWorkspaceDeleted();
    throw err;
  }
}

export async function findCredential(db: Db, opts: Account & { id: string }): Promise<Row> {
  const [row] = await db
    .select()
    .from(byokCredentials)
    .where(and(eq(byokCredentials.id, opts.id.toLowerCase()), eq(byokCredentials.orgId, opts.orgId)))
    .limit(1);
  if (!row) throw resourceNotFound('credential');
  return row;
}

export async function updateCredential(
  db: Db,
  sealer: Sealer,
  opts: Account & { id: string; body: UpdateByok },
): Promise<Row> {
  const current = await findCredential(db, opts);
  const b = opts.body;
  if ((b.is_byok_only ?? current.isByokOnly) && (b.is_fallback ?? current.isFallback))
    throw invalidRequest(`is_byok_only: ${BYOK_ONLY_WITH_FALLBACK}`);
  await checkHashes(db, opts.orgId, b.allowed_api_key_hashes);
  const [row] = await db
    .update(byokCredentials)
    .set({
      name: b.name,
      disabled: b.disabled,
      isByokOnly: b.is_byok_only,
      isFallback: b.is_fallback,
      isRequired: b.is_required,
      declaredZdr: b.declared_zdr,
      sortOrder: b.sort_order,
      allowedApiKeyHashes: unique(b.allowed_api_key_hashes),
      allowedModels: unique(b.allowed_models),
      allowedUserIds: unique(b.allowed_user_ids),
      ...(b.key === undefined ? {} : { label: maskSecret(b.key), sealedKey: sealer.seal(b.key, current.id) }),
      updatedAt: new Date(),
    })
    .where(eq(byokCredentials.id, current.id))
    .returning();
  if (!row) throw resourceNotFound('credential');
  return row;
}

export async function deleteCredential(db: Db, opts: Account & { id: string }): Promise<void> {
  const row = await findCredential(db, opts);
  await db.delete(byokCredentials).where(eq(byokCredentials.id, row.id));
}

/** The workspace's credentials (the account's default workspace unless one is given), optionally of one provider. */
export async function listCredentials(
  db: Db,
  opts: Account & { workspaceId?: string; provider?: string; offset: number; limit: number },
) {
  const workspaceId = opts.workspaceId?.toLowerCase() ?? (await defaultWorkspace(db, opts.orgId));
  const where = and(
    eq(byokCredentials.orgId, opts.orgId),
    eq(byokCredentials.workspaceId, workspaceId),
    opts.provider ? eq(byokCredentials.provider, opts.provider) : undefined,
  );
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(byokCredentials)
      .where(where)
      .orderBy(
        asc(byokCredentials.provider),
        asc(byokCredentials.isFallback),
        asc(byokCredentials.sortOrder),
        asc(byokCredentials.createdAt),
      )
      .offset(opts.offset)
      .limit(opts.limit),
    db.select({ n: count() }).from(byokCredentials).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
