// Guardrails of an account (docs/guides/keys-and-budgets.md): create, list, get, update and
// delete, and their assignments to keys and to members. One guardrail applies to a key: its own
// assignment, else its creator's (as a member), else its workspace's default; assigning a key or
// member that already has one moves it. Every change alters what keys resolve to, so each is
// announced and every gateway drops its cached key resolutions.
import { randomUUID } from 'node:crypto';
import { and, asc, count, eq, inArray, isNull, or } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import {
  apiKeys,
  guardrailKeyAssignments,
  guardrailMemberAssignments,
  guardrails,
  memberships,
  workspaces,
} from '../store/schema.ts';
import { interns } from '../store/schema-interns.ts';
import { invalidRequest, resourceNotFound } from '../errors.ts';
import { isUuid } from '../http/common.schemas.ts';
import { type CreateGuardrail, type Guardrail, NOT_BUILT, type UpdateGuardrail } from './guardrails.schemas.ts';

type Row = typeof guardrails.$inferSelect;
export type GuardrailDeps = { db: Db; now: () => number; announce(): Promise<void> };

export function toGuardrail(r: Row): Guardrail {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    limit_usd: r.limitUsd,
    reset_interval: r.resetInterval ?? null,
    include_byok_in_budgets: r.includeByokInBudgets,
    allowed_models: r.allowedModels ?? null,
    ignored_models: r.ignoredModels ?? null,
    allowed_providers: r.allowedProviders ?? null,
    ignored_providers: r.ignoredProviders ?? null,
    enforce_zdr: r.enforceZdr,
    workspace_id: r.workspaceId,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt?.toISOString() ?? null,
  };
}

/** A setting of the SDK's shape that cohort does not enforce: refused unless it asks for nothing. */
function refuseNotBuilt(body: Record<string, unknown>): void {
  for (const f of NOT_BUILT) {
    const v = body[f];
    if (v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0)) continue;
    throw invalidRequest(`${f}: not built yet in cohort (docs/internals/known-gaps.md)`);
  }
}

const unique = (xs: string[] | null | undefined) => (xs ? [...new Set(xs)] : xs);

function columns(body: UpdateGuardrail): Partial<typeof guardrails.$inferInsert> {
  return {
    name: body.name,
    description: body.description,
    limitUsd: body.limit_usd,
    resetInterval: body.reset_interval,
    includeByokInBudgets: body.include_byok_in_budgets,
    allowedModels: unique(body.allowed_models),
    ignoredModels: unique(body.ignored_models),
    allowedProviders: unique(body.allowed_providers),
    ignoredProviders: unique(body.ignored_providers),
    enforceZdr: body.enforce_zdr === null ? false : body.enforce_zdr,
  };
}

export async function findGuardrail(db: Db, o: { orgId: string; id: string }): Promise<Row> {
  const [row] = isUuid(o.id)
    ? await db
        .select()
        .from(guardrails)
        .where(and(eq(guardrails.orgId, o.orgId), eq(guardrails.id, o.id.toLowerCase())))
    : [];
  if (!row) throw resourceNotFound('guardrail');
  return row;
}

export async function listGuardrails(db: Db, o: { orgId: string; offset: number; limit: number }) {
  const where = eq(guardrails.orgId, o.orgId);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(guardrails)
      .where(where)
      .orderBy(asc(guardrails.createdAt), asc(guardrails.id))
      .offset(o.offset)
      .limit(o.limit),
    db.select({ n: count() }).from(guardrails).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function createGuardrail(d: GuardrailDeps, o: { orgId: string; body: CreateGuardrail }): Promise<Row> {
  const { body } = o;
  refuseNotBuilt(body);
  if (body.reset_interval && (body.limit_usd === undefined || body.limit_usd === null))
    throw invalidRequest('reset_interval: a reset needs limit_usd');
  if (body.workspace_id !== undefined) {
    const [ws] = await d.db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(and(eq(workspaces.orgId, o.orgId), eq(workspaces.id, body.workspace_id)));
    if (!ws) throw invalidRequest('workspace_id: no workspace with this id in the account');
  }
  const [row] = await d.db
    .insert(guardrails)
    .values({ ...columns(body), id: randomUUID(), orgId: o.orgId, name: body.name, workspaceId: body.workspace_id })
    .returning();
  return row!;
}

export async function updateGuardrail(
  d: GuardrailDeps,
  o: { orgId: string; id: string; body: UpdateGuardrail },
): Promise<Row> {
  refuseNotBuilt(o.body);
  const row = await findGuardrail(d.db, o);
  const limit = o.body.limit_usd === undefined ? row.limitUsd : o.body.limit_usd;
  // Clearing the limit clears its reset; a reset asked for without a limit is refused.
  if (o.body.reset_interval && limit === null) throw invalidRequest('reset_interval: a reset needs limit_usd');
  const [updated] = await d.db
    .update(guardrails)
    .set({
      ...columns(o.body),
      resetInterval: limit === null ? null : o.body.reset_interval,
      updatedAt: new Date(d.now()),
    })
    .where(eq(guardrails.id, row.id))
    .returning();
  await d.announce();
  return updated!;
}

export async function deleteGuardrail(d: GuardrailDeps, o: { orgId: string; id: string }): Promise<void> {
  const row = await findGuardrail(d.db, o);
  await d.db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    await tx.update(workspaces).set({ defaultGuardrailId: null }).where(eq(workspaces.defaultGuardrailId, row.id));
    await tx.delete(guardrails).where(eq(guardrails.id, row.id));
  });
  await d.announce();
}

/** The account's keys by hash (not interns' own, not revoked); an unknown hash is a 400 naming it. */
async function keysByHash(db: Db, orgId: string, hashes: string[]) {
  const rows = await db
    .select({ id: apiKeys.id, hash: apiKeys.hash })
    .from(apiKeys)
    .leftJoin(interns, eq(interns.apiKeyId, apiKeys.id))
    .where(and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt), isNull(interns.id), inArray(apiKeys.hash, hashes)));
  const known = new Set(rows.map((r) => r.hash));
  const unknown = hashes.find((h) => !known.has(h));
  if (unknown !== undefined)
    throw invalidRequest(`key_hashes: no key of the account has hash ${unknown.slice(0, 128)}`);
  return rows;
}

export async function assignKeys(
  d: GuardrailDeps,
  o: { orgId: string; id: string; hashes: string[]; by: string },
): Promise<number> {
  const g = await findGuardrail(d.db, o);
  const keys = await keysByHash(d.db, o.orgId, [...new Set(o.hashes)]);
  await d.db
    .insert(guardrailKeyAssignments)
    .values(keys.map((k) => ({ id: randomUUID(), keyId: k.id, guardrailId: g.id, assignedBy: o.by })))
    .onConflictDoUpdate({
      target: guardrailKeyAssignments.keyId,
      set: { guardrailId: g.id, assignedBy: o.by, createdAt: new Date(d.now()) },
    });
  await d.announce();
  return keys.length;
}

export async function unassignKeys(d: GuardrailDeps, o: { orgId: string; id: string; hashes: string[] }) {
  const g = await findGuardrail(d.db, o);
  const keys = await keysByHash(d.db, o.orgId, [...new Set(o.hashes)]);
  const gone = await d.db
    .delete(guardrailKeyAssignments)
    .where(
      and(
        eq(guardrailKeyAssignments.guardrailId, g.id),
        inArray(
          guardrailKeyAssignments.keyId,
          keys.map((k) => k.id),
        ),
      ),
    )
    .returning();
  await d.announce();
  return gone.length;
}

/** One guardrail's key assignments, or (without `id`) every one of the account's. */
export async function keyAssignments(db: Db, o: { orgId: string; id?: string; offset: number; limit: number }) {
  const where = o.id
    ? eq(guardrailKeyAssignments.guardrailId, (await findGuardrail(db, { orgId: o.orgId, id: o.id })).id)
    : eq(guardrails.orgId, o.orgId);
  const from = () =>
    db
      .select({ a: guardrailKeyAssignments, key: apiKeys })
      .from(guardrailKeyAssignments)
      .innerJoin(guardrails, eq(guardrails.id, guardrailKeyAssignments.guardrailId))
      .innerJoin(apiKeys, eq(apiKeys.id, guardrailKeyAssignments.keyId))
      .where(where);
  const [rows, [total]] = await Promise.all([
    from()
      .orderBy(asc(guardrailKeyAssignments.createdAt), asc(guardrailKeyAssignments.id))
      .offset(o.offset)
      .limit(o.limit),
    db
      .select({ n: count() })
      .from(guardrailKeyAssignments)
      .innerJoin(guardrails, eq(guardrails.id, guardrailKeyAssignments.guardrailId))
      .where(where),
  ]);
  return {
    data: rows.map(({ a, key }) => ({
      id: a.id,
      guardrail_id: a.guardrailId,
      key_hash: key.hash,
      key_label: key.label,
      key_name: key.name,
      assigned_by: a.assignedBy,
      created_at: a.createdAt.toISOString(),
    })),
    total_count: total?.n ?? 0,
  };
}

/** Current members of the account; one who is not is a 400 naming them. */
async function members(db: Db, orgId: string, userIds: string[]) {
  const rows = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), isNull(memberships.leftAt), inArray(memberships.userId, userIds)));
  const known = new Set(rows.map((r) => r.userId));
  const unknown = userIds.find((u) => !known.has(u));
  if (unknown !== undefined)
    throw invalidRequest(`member_user_ids: ${unknown.slice(0, 256)} is not a current member of the account`);
  return userIds;
}

export async function assignMembers(
  d: GuardrailDeps,
  o: { orgId: string; id: string; userIds: string[]; by: string },
): Promise<number> {
  const g = await findGuardrail(d.db, o);
  const ids = await members(d.db, o.orgId, [...new Set(o.userIds)]);
  await d.db
    .insert(guardrailMemberAssignments)
    .values(ids.map((userId) => ({ id: randomUUID(), orgId: o.orgId, userId, guardrailId: g.id, assignedBy: o.by })))
    .onConflictDoUpdate({
      target: [guardrailMemberAssignments.orgId, guardrailMemberAssignments.userId],
      set: { guardrailId: g.id, assignedBy: o.by, createdAt: new Date(d.now()) },
    });
  await d.announce();
  return ids.length;
}

export async function unassignMembers(d: GuardrailDeps, o: { orgId: string; id: string; userIds: string[] }) {
  const g = await findGuardrail(d.db, o);
  const gone = await d.db
    .delete(guardrailMemberAssignments)
    .where(
      and(
        eq(guardrailMemberAssignments.guardrailId, g.id),
        inArray(guardrailMemberAssignments.userId, [...new Set(o.userIds)]),
      ),
    )
    .returning();
  await d.announce();
  return gone.length;
}

/** One guardrail's member assignments, or (without `id`) every one of the account's. */
export async function memberAssignments(db: Db, o: { orgId: string; id?: string; offset: number; limit: number }) {
  const where = o.id
    ? eq(guardrailMemberAssignments.guardrailId, (await findGuardrail(db, { orgId: o.orgId, id: o.id })).id)
    : eq(guardrailMemberAssignments.orgId, o.orgId);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(guardrailMemberAssignments)
      .where(where)
      .orderBy(asc(guardrailMemberAssignments.createdAt), asc(guardrailMemberAssignments.id))
      .offset(o.offset)
      .limit(o.limit),
    db.select({ n: count() }).from(guardrailMemberAssignments).where(where),
  ]);
  return {
    data: rows.map((a) => ({
      id: a.id,
      guardrail_id: a.guardrailId,
      organization_id: a.orgId,
      user_id: a.userId,
      assigned_by: a.assignedBy,
      created_at: a.createdAt.toISOString(),
    })),
    total_count: total?.n ?? 0,
  };
}

/** A workspace's default guardrail must be the account's, and not bound to another workspace. */
export async function checkDefaultGuardrail(db: Db, o: { orgId: string; workspaceId: string | null; id: string }) {
  const [row] = await db
    .select({ id: guardrails.id })
    .from(guardrails)
    .where(
      and(
        eq(guardrails.orgId, o.orgId),
        eq(guardrails.id, o.id),
        o.workspaceId
          ? or(isNull(guardrails.workspaceId), eq(guardrails.workspaceId, o.workspaceId))
          : isNull(guardrails.workspaceId),
      ),
    );
  if (!row) throw invalidRequest('default_guardrail_id: no guardrail with this id in the account for this workspace');
}
