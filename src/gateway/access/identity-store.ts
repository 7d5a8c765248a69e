// Organizations, users, memberships, programme membership and API keys. Keys are stored only
// as SHA-256 hex; the raw key exists once, in the return value of createKey.
import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { interns } from '../store/schema-interns.ts';
import type { Db } from '../store/db.ts';
import {
  apiKeys,
  guardrailKeyAssignments,
  guardrailMemberAssignments,
  guardrails,
  memberships,
  organizations,
  users,
  workspaces,
} from '../store/schema.ts';
import { generateApiKey, hashKey, maskSecret } from '../crypto/keys.ts';
import type { Reset } from './periods.ts';
import type { BudgetScope } from './budgets.ts';

export type KeyKind = 'management' | 'standard';
export type ActsAs = 'user' | 'organization';

/** Everything a request needs to know about its key, resolved in one query. */
export type Principal = {
  keyId: string;
  keyHash: string;
  orgId: string;
  kind: KeyKind;
  actsAs: ActsAs;
  userId: string;
  /** The user or organization the key acts as (rate limits apply to it). */
  subjectId: string;
  /** The key's workspace, else the organization's default; null when that default was deleted. */
  workspaceId: string | null;
  creatorDeparted: boolean;
  granted: boolean;
  internsProgramme: boolean;
  /** Set on an intern's own key: it may make model requests for that intern and nothing else. */
  internId: string | null;
  /** That intern's configured model (null: its workspace's default), which serves every model request made with its key. */
  internModel: string | null;
  /** When the key stops working (ms since the epoch), checked on every request, cached or not. */
  expiresAt: number | null;
  /** The spending limits its model requests count against (docs/guides/keys-and-budgets.md): the
   * key's own; for an intern's key, that of the key that created the intern. */
  budgets: BudgetScope[];
  /** The key whose usage a model request adds to: this one, or for an intern's key the key that created the intern. */
  chargedKeyId: string;
  /** The one guardrail its model requests run under (docs/guides/keys-and-budgets.md), or null. */
  guardrail: GuardrailPolicy | null;
};

/** What a guardrail restricts; its spending limit is among the principal's budgets. */
export type GuardrailPolicy = {
  id: string;
  allowedModels: string[] | null;
  ignoredModels: string[] | null;
  allowedProviders: string[] | null;
  ignoredProviders: string[] | null;
  enforceZdr: boolean;
};

export async function createOrganization(db: Db, opts: { name: string; internsProgramme?: boolean }) {
  const [row] = await db
    .insert(organizations)
    .values({ id: randomUUID(), name: opts.name, internsProgramme: opts.internsProgramme ?? false })
    .returning();
  return row!;
}

export async function createUser(db: Db, opts: { name: string; id?: string; internsProgramme?: boolean }) {
  const id = opts.id ?? `user_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const [row] = await db
    .insert(users)
    .values({ id, name: opts.name, internsProgramme: opts.internsProgramme ?? false })
    .returning();
  return row!;
}

/** Adds the member, or brings back one who left (with the new role). */
export async function addMember(db: Db, opts: { orgId: string; userId: string; role?: string }) {
  const [row] = await db
    .insert(memberships)
    .values({ orgId: opts.orgId, userId: opts.userId, role: opts.role ?? 'member' })
    .onConflictDoUpdate({
      target: [memberships.orgId, memberships.userId],
      set: { leftAt: null, role: opts.role ?? 'member' },
    })
    .returning();
  return row!;
}

/** The member leaves: their keys stop working except where granted. */
export async function removeMember(db: Db, opts: { orgId: string; userId: string }): Promise<boolean> {
  const rows = await db
    .update(memberships)
    .set({ leftAt: new Date() })
    .where(and(eq(memberships.orgId, opts.orgId), eq(memberships.userId, opts.userId), isNull(memberships.leftAt)))
    .returning();
  return rows.length > 0;
}

export async function setProgramme(
  db: Db,
  opts: { userId?: string; orgId?: string; member: boolean },
): Promise<boolean> {
  const rows = opts.userId
    ? await db.update(users).set({ internsProgramme: opts.member }).where(eq(users.id, opts.userId)).returning()
    : await db
        .update(organizations)
        .set({ internsProgramme: opts.member })
        .where(eq(organizations.id, opts.orgId!))
        .returning();
  return rows.length > 0;
}

export async function createKey(
  db: Db,
  opts: {
    orgId: string;
    creatorUserId: string;
    kind: KeyKind;
    actsAs?: ActsAs;
    name?: string;
    workspaceId?: string | null;
    limitUsd?: number | null;
    limitReset?: Reset | null;
    includeByokInLimit?: boolean;
    expiresAt?: Date | null;
  },
) {
  const raw = generateApiKey();
  const [row] = await db
    .insert(apiKeys)
    .values({
      id: randomUUID(),
      orgId: opts.orgId,
      hash: hashKey(raw),
      label: maskSecret(raw),
      name: opts.name ?? `${opts.kind} key`,
      kind: opts.kind,
      actsAs: opts.actsAs ?? 'user',
      creatorUserId: opts.creatorUserId,
      workspaceId: opts.workspaceId ?? null,
      limitUsd: opts.limitUsd ?? null,
      limitReset: opts.limitReset ?? null,
      includeByokInLimit: opts.includeByokInLimit ?? false,
      expiresAt: opts.expiresAt ?? null,
    })
    .returning();
  return { key: row!, raw };
}

export async function revokeKey(db: Db, id: string) {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning();
  return row ?? null;
}

export async function grantKey(db: Db, opts: { id: string; granted: boolean }) {
  const [row] = await db.update(apiKeys).set({ granted: opts.granted }).where(eq(apiKeys.id, opts.id)).returning();
  return row ?? null;
}

export async function findKey(db: Db, id: string) {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
  return row ?? null;
}

export async function findOrganization(db: Db, id: string) {
  const [row] = await db.select().from(organizations).where(eq(organizations.id, id)).limit(1);
  return row ?? null;
}

export async function findUser(db: Db, id: string) {
  const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return row ?? null;
}

export async function findMembership(db: Db, opts: { orgId: string; userId: string }) {
  const [row] = await db
    .select()
    .from(memberships)
    .where(and(eq(memberships.orgId, opts.orgId), eq(memberships.userId, opts.userId)))
    .limit(1);
  return row ?? null;
}

export async function listOrganizations(db: Db) {
  return db.select().from(organizations).orderBy(asc(organizations.createdAt), asc(organizations.id));
}

export async function listUsers(db: Db) {
  return db.select().from(users).orderBy(asc(users.createdAt), asc(users.id));
}

/** Memberships of the given user, or of every user when absent (current and past). */
export async function listMemberships(db: Db, userId?: string) {
  const q = db.select().from(memberships).orderBy(asc(memberships.joinedAt), asc(memberships.orgId));
  return userId ? q.where(eq(memberships.userId, userId)) : q;
}

export async function listKeys(db: Db, orgId?: string) {
  const q = db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt));
  return orgId ? q.where(eq(apiKeys.orgId, orgId)) : q;
}

const creatorKeys = alias(apiKeys, 'creator_keys');

export async function findPrincipal(db: Db, hash: string): Promise<Principal | null> {
  const [row] = await db
    .select({
      key: apiKeys,
      org: organizations,
      user: users,
      membership: memberships,
      internId: interns.id,
      internModel: interns.model,
      creatorKeyId: interns.creatorKeyId,
      creatorKey: creatorKeys.id,
      creatorRevokedAt: creatorKeys.revokedAt,
      creatorLimit: creatorKeys.limitUsd,
      creatorReset: creatorKeys.limitReset,
      creatorByok: creatorKeys.includeByokInLimit,
      guardrail: guardrails,
      workspaceByok: workspaces.includeByokInBudgets,
    })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .innerJoin(users, eq(users.id, apiKeys.creatorUserId))
    .leftJoin(memberships, and(eq(memberships.orgId, apiKeys.orgId), eq(memberships.userId, apiKeys.creatorUserId)))
    .leftJoin(interns, eq(interns.apiKeyId, apiKeys.id))
    .leftJoin(creatorKeys, eq(creatorKeys.id, interns.creatorKeyId))
    // The one guardrail: the key's own (an intern's key: its creator key's), else its creator's as a member, else its workspace's default.
    .leftJoin(
      guardrailKeyAssignments,
      eq(guardrailKeyAssignments.keyId, sql`coalesce(${interns.creatorKeyId}, ${apiKeys.id})`),
    )
    .leftJoin(
      guardrailMemberAssignments,
      and(
        eq(guardrailMemberAssignments.orgId, apiKeys.orgId),
        eq(guardrailMemberAssignments.userId, apiKeys.creatorUserId),
      ),
    )
    .leftJoin(workspaces, eq(workspaces.id, sql`coalesce(${apiKeys.workspaceId}, ${organizations.defaultWorkspaceId})`))
    .leftJoin(
      guardrails,
      eq(
        guardrails.id,
        sql`coalesce(${guardrailKeyAssignments.guardrailId}, ${guardrailMemberAssignments.guardrailId}, ${workspaces.defaultGuardrailId})`,
      ),
    )
    .where(and(eq(apiKeys.hash, hash), isNull(apiKeys.revokedAt), eq(apiKeys.disabled, false)))
    .limit(1);
  if (!row) return null;
  const { key, org, user, membership, internId, guardrail: g } = row;
  // An intern's key lives only as long as the key that created the intern.
  if (internId && row.creatorKeyId && (row.creatorKey === null || row.creatorRevokedAt !== null)) return null;
  return {
    keyId: key.id,
    keyHash: key.hash,
    orgId: org.id,
    kind: key.kind,
    actsAs: key.actsAs,
    userId: user.id,
    subjectId: key.actsAs === 'user' ? user.id : org.id,
    workspaceId: key.workspaceId ?? org.defaultWorkspaceId,
    creatorDeparted: !membership || membership.leftAt !== null,
    granted: key.granted,
    // An intern's key is no caller of interns: /interns answers it as it answers anyone outside the programme.
    internsProgramme: !internId && (org.internsProgramme || user.internsProgramme),
    internId: internId ?? null,
    internModel: row.internModel ?? null,
    expiresAt: key.expiresAt?.getTime() ?? null,
    chargedKeyId: row.creatorKey ?? key.id,
    budgets: [
      ...keyBudget(key.id, key.limitUsd, key.limitReset ?? null, key.includeByokInLimit),
      ...(row.creatorKey
        ? keyBudget(row.creatorKey, row.creatorLimit, row.creatorReset ?? null, row.creatorByok ?? false)
        : []),
      ...(g?.limitUsd != null
        ? [
            {
              id: `guardrail:${g.id}`,
              what: 'guardrail' as const,
              limitUsd: g.limitUsd,
              reset: g.resetInterval ?? null,
              // BYOK spend counts when the guardrail or the key's workspace says so.
              includeByok: g.includeByokInBudgets || (row.workspaceByok ?? false),
            },
          ]
        : []),
    ],
    guardrail: g
      ? {
          id: g.id,
          allowedModels: g.allowedModels?.length ? g.allowedModels : null,
          ignoredModels: g.ignoredModels?.length ? g.ignoredModels : null,
          allowedProviders: g.allowedProviders?.length ? g.allowedProviders : null,
          ignoredProviders: g.ignoredProviders?.length ? g.ignoredProviders : null,
          enforceZdr: g.enforceZdr,
        }
      : null,
  };
}

const keyBudget = (id: string, limit: number | null, reset: Reset | null, includeByok: boolean): BudgetScope[] =>
  limit === null ? [] : [{ id: `key:${id}`, what: 'key', limitUsd: limit, reset, includeByok }];

/** Hashes of the organization's live keys (for BYOK `allowed_api_key_hashes` ownership checks). */
export async function keyHashesOf(db: Db, orgId: string): Promise<Set<string>> {
  const rows = await db
    .select({ hash: apiKeys.hash })
    .from(apiKeys)
    .where(and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt)));
  return new Set(rows.map((r) => r.hash));
}

export async function setDefaultWorkspace(db: Db, opts: { orgId: string; workspaceId: string | null }) {
  await db.update(organizations).set({ defaultWorkspaceId: opts.workspaceId }).where(eq(organizations.id, opts.orgId));
}
