// API keys over the API (docs/guides/keys-and-budgets.md): list, get, create, update and delete
// the account's keys, and a key's own view of itself. Usage is the request log's cost charged to
// the key (its own requests and those of the interns it created): all time and in the current UTC
// day, week (from Monday) and month, BYOK apart. Interns' own keys
// are the intern lifecycle's and do not appear here. Every change that alters what a key resolves
// to is announced, so cached resolutions (here and in other gateways) are dropped at once.
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { apiKeys, memberships, organizations, workspaces } from '../store/schema.ts';
import { interns } from '../store/schema-interns.ts';
import { inferenceRequests } from '../store/schema-inference.ts';
import * as identity from '../access/identity-store.ts';
import type { Principal } from '../access/identity-store.ts';
import { periodStart, type Reset } from '../access/periods.ts';
import { invalidRequest, resourceNotFound } from '../errors.ts';
import type { CreateKey, Key, UpdateKey } from './keys.schemas.ts';

type Row = typeof apiKeys.$inferSelect;
export type Usage = {
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  byok_usage: number;
  byok_usage_daily: number;
  byok_usage_weekly: number;
  byok_usage_monthly: number;
};
const NO_USAGE: Usage = {
  usage: 0,
  usage_daily: 0,
  usage_weekly: 0,
  usage_monthly: 0,
  byok_usage: 0,
  byok_usage_daily: 0,
  byok_usage_weekly: 0,
  byok_usage_monthly: 0,
};

export type KeyDeps = { db: Db; now: () => number; announce(hash: string): Promise<void> };

const PAGE = 100;

/** Usage of each key, by id. */
export async function usageOf(db: Db, keyIds: string[], now: number): Promise<Map<string, Usage>> {
  if (!keyIds.length) return new Map();
  const since = (r: Reset) => new Date(periodStart(r, now)).toISOString();
  const r = inferenceRequests;
  const sum = (byok: boolean, from?: string) =>
    from
      ? sql<number>`coalesce(sum(${r.cost}) filter (where ${r.isByok} = ${byok} and ${r.createdAt} >= ${from}::timestamptz), 0)`
      : sql<number>`coalesce(sum(${r.cost}) filter (where ${r.isByok} = ${byok}), 0)`;
  const rows = await db
    .select({
      id: r.chargedKeyId,
      usage: sum(false),
      usage_daily: sum(false, since('daily')),
      usage_weekly: sum(false, since('weekly')),
      usage_monthly: sum(false, since('monthly')),
      byok_usage: sum(true),
      byok_usage_daily: sum(true, since('daily')),
      byok_usage_weekly: sum(true, since('weekly')),
      byok_usage_monthly: sum(true, since('monthly')),
    })
    .from(r)
    .where(inArray(r.chargedKeyId, keyIds))
    .groupBy(r.chargedKeyId);
  const out = new Map<string, Usage>();
  for (const { id, ...u } of rows) {
    const n = Object.fromEntries(Object.entries(u).map(([k, v]) => [k, Number(v)])) as Usage;
    out.set(id!, n);
  }
  return out;
}

/** Spend counted against a key's limit in its current period. */
export function limitSpend(u: Usage, reset: Reset | null, includeByok: boolean): number {
  const field = reset === null ? '' : `_${reset}`;
  const own = u[`usage${field}` as keyof Usage];
  return own + (includeByok ? u[`byok_usage${field}` as keyof Usage] : 0);
}

const remaining = (r: Pick<Row, 'limitUsd' | 'limitReset' | 'includeByokInLimit'>, u: Usage) =>
  r.limitUsd === null ? null : Math.max(0, r.limitUsd - limitSpend(u, r.limitReset ?? null, r.includeByokInLimit));

export function toKey(r: Row, u: Usage, defaultWorkspaceId: string | null): Key {
  return {
    hash: r.hash,
    name: r.name,
    label: r.label,
    disabled: r.disabled,
    limit: r.limitUsd,
    limit_remaining: remaining(r, u),
    limit_reset: r.limitReset ?? null,
    include_byok_in_limit: r.includeByokInLimit,
    ...u,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt?.toISOString() ?? null,
    expires_at: r.expiresAt?.toISOString() ?? null,
    creator_user_id: r.creatorUserId,
    external_user: null,
    workspace_id: r.workspaceId ?? defaultWorkspaceId ?? '',
  };
}

async function defaultWorkspaceOf(db: Db, orgId: string): Promise<string | null> {
  const [org] = await db
    .select({ ws: organizations.defaultWorkspaceId })
    .from(organizations)
    .where(eq(organizations.id, orgId));
  return org?.ws ?? null;
}

/** The account's live keys that are not an intern's own. */
const manageable = (orgId: string) => and(eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt), isNull(interns.id));

async function findRow(db: Db, orgId: string, hash: string): Promise<Row> {
  // Not a hash of this account's keys: 404, the same answer as a hash no key has.
  const [row] = await db
    .select({ key: apiKeys })
    .from(apiKeys)
    .leftJoin(interns, eq(interns.apiKeyId, apiKeys.id))
    .where(and(manageable(orgId), eq(apiKeys.hash, hash)))
    .limit(1);
  if (!row) throw resourceNotFound('key');
  return row.key;
}

/** Drops the cached resolutions of the key and of its interns' keys, which carry its limit. */
async function announceWithInterns(d: KeyDeps, row: Row): Promise<void> {
  const theirs = await d.db
    .select({ hash: apiKeys.hash })
    .from(interns)
    .innerJoin(apiKeys, eq(apiKeys.id, interns.apiKeyId))
    .where(eq(interns.creatorKeyId, row.id));
  await Promise.all([row.hash, ...theirs.map((t) => t.hash)].map((h) => d.announce(h)));
}

async function one(d: KeyDeps, row: Row): Promise<Key> {
  const u = (await usageOf(d.db, [row.id], d.now())).get(row.id) ?? NO_USAGE;
  return toKey(row, u, await defaultWorkspaceOf(d.db, row.orgId));
}

export async function listKeys(
  d: KeyDeps,
  o: { orgId: string; offset: number; includeDisabled: boolean; workspaceId?: string },
): Promise<Key[]> {
  const def = await defaultWorkspaceOf(d.db, o.orgId);
  const inWorkspace =
    o.workspaceId === undefined
      ? undefined
      : o.workspaceId === def
        ? sql`(${apiKeys.workspaceId} = ${o.workspaceId} or ${apiKeys.workspaceId} is null)`
        : eq(apiKeys.workspaceId, o.workspaceId);
  const rows = await d.db
    .select({ key: apiKeys })
    .from(apiKeys)
    .leftJoin(interns, eq(interns.apiKeyId, apiKeys.id))
    .where(and(manageable(o.orgId), o.includeDisabled ? undefined : eq(apiKeys.disabled, false), inWorkspace))
    .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id))
    .offset(o.offset)
    .limit(PAGE);
  const usage = await usageOf(
    d.db,
    rows.map((r) => r.key.id),
    d.now(),
  );
  return rows.map((r) => toKey(r.key, usage.get(r.key.id) ?? NO_USAGE, def));
}

export async function getKey(d: KeyDeps, o: { orgId: string; hash: string }): Promise<Key> {
  return one(d, await findRow(d.db, o.orgId, o.hash));
}

export async function createKey(d: KeyDeps, o: { principal: Principal; body: CreateKey }) {
  const { principal: p, body } = o;
  if (body.external !== undefined)
    throw invalidRequest('external: keys for external users are not built yet (docs/internals/known-gaps.md)');
  if (body.limit_reset && (body.limit === undefined || body.limit === null))
    throw invalidRequest('limit_reset: a reset needs a limit');
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= d.now()) throw invalidRequest('expires_at: must be in the future');
  let workspaceId: string | null = null;
  if (body.workspace_id !== undefined) {
    const [ws] = await d.db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(and(eq(workspaces.orgId, p.orgId), eq(workspaces.id, body.workspace_id)));
    if (!ws) throw invalidRequest('workspace_id: no workspace with this id in the account');
    workspaceId = ws.id;
  }
  const creator = body.creator_user_id ?? p.userId;
  const [member] = await d.db
    .select({ leftAt: memberships.leftAt })
    .from(memberships)
    .where(and(eq(memberships.orgId, p.orgId), eq(memberships.userId, creator)));
  if (!member || member.leftAt) throw invalidRequest('creator_user_id: not a current member of the account');
  const { key, raw } = await identity.createKey(d.db, {
    orgId: p.orgId,
    creatorUserId: creator,
    kind: 'standard',
    name: body.name,
    workspaceId,
    limitUsd: body.limit ?? null,
    limitReset: body.limit_reset ?? null,
    includeByokInLimit: body.include_byok_in_limit ?? false,
    expiresAt,
  });
  return { data: await one(d, key), key: raw };
}

export async function updateKey(d: KeyDeps, o: { orgId: string; hash: string; body: UpdateKey }): Promise<Key> {
  const row = await findRow(d.db, o.orgId, o.hash);
  const { body } = o;
  const limit = body.limit === undefined ? row.limitUsd : body.limit;
  // Clearing the limit clears its reset; a reset asked for without a limit is refused.
  if (body.limit_reset && limit === null) throw invalidRequest('limit_reset: a reset needs a limit');
  const [updated] = await d.db
    .update(apiKeys)
    .set({
      name: body.name,
      disabled: body.disabled,
      limitUsd: body.limit,
      // A key without a limit has no reset.
      limitReset: limit === null ? null : body.limit_reset,
      includeByokInLimit: body.include_byok_in_limit,
      updatedAt: new Date(d.now()),
    })
    .where(eq(apiKeys.id, row.id))
    .returning();
  await announceWithInterns(d, row);
  return one(d, updated!);
}

export async function deleteKey(d: KeyDeps, o: { orgId: string; hash: string }): Promise<void> {
  const row = await findRow(d.db, o.orgId, o.hash);
  await identity.revokeKey(d.db, row.id);
  await announceWithInterns(d, row);
}

/** What any key may know of itself (GET /key). */
export async function currentKey(d: KeyDeps, p: Principal) {
  const row = await identity.findKey(d.db, p.keyId);
  if (!row) throw resourceNotFound('key');
  const u = (await usageOf(d.db, [row.id], d.now())).get(row.id) ?? NO_USAGE;
  return {
    label: row.label,
    limit: row.limitUsd,
    limit_remaining: remaining(row, u),
    limit_reset: row.limitReset ?? null,
    include_byok_in_limit: row.includeByokInLimit,
    ...u,
    is_free_tier: false,
    is_management_key: row.kind === 'management',
    is_provisioning_key: row.kind === 'management',
    creator_user_id: row.creatorUserId,
    expires_at: row.expiresAt?.toISOString() ?? null,
    organization_id: row.orgId,
    workspace_id: p.workspaceId,
    allowed_data_regions: [],
    rate_limit: {
      requests: -1,
      interval: '10s',
      note: 'cohort limits concurrent requests per key and account, not requests per interval (docs/reference/configuration.md)',
    },
    free_model_daily_requests: { limit: 0, remaining: 0, used: 0 },
  };
}
