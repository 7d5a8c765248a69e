// What the admin CLI prints: the JSON shape of each record (snake_case, like the API) and the
// human lines. A key's secret appears only in the output of `key create`, never in a listing.
import type { apiKeys, memberships, organizations, users } from '../gateway/store/schema.ts';

type Org = typeof organizations.$inferSelect;
type User = typeof users.$inferSelect;
type Membership = typeof memberships.$inferSelect;
type Key = typeof apiKeys.$inferSelect;

const iso = (d: Date | null) => d?.toISOString() ?? null;
const yesNo = (b: boolean) => (b ? 'yes' : 'no');

export const orgJson = (o: Org) => ({
  id: o.id,
  name: o.name,
  interns_programme: o.internsProgramme,
  default_workspace_id: o.defaultWorkspaceId,
  created_at: iso(o.createdAt),
});

export const membershipJson = (m: Membership) => ({
  org_id: m.orgId,
  user_id: m.userId,
  role: m.role,
  joined_at: iso(m.joinedAt),
  left_at: iso(m.leftAt),
});

export const userJson = (u: User & { memberships: Membership[] }) => ({
  id: u.id,
  name: u.name,
  interns_programme: u.internsProgramme,
  created_at: iso(u.createdAt),
  memberships: u.memberships.map(membershipJson),
});

/** A key record without its secret; `hash` is the SHA-256 hex that `allowed_api_key_hashes` takes. */
export const keyJson = (k: Key) => ({
  id: k.id,
  org_id: k.orgId,
  name: k.name,
  label: k.label,
  hash: k.hash,
  kind: k.kind,
  acts_as: k.actsAs,
  creator_user_id: k.creatorUserId,
  workspace_id: k.workspaceId,
  granted: k.granted,
  created_at: iso(k.createdAt),
  revoked_at: iso(k.revokedAt),
});

export const orgLine = (o: ReturnType<typeof orgJson>) =>
  `organization ${o.id} "${o.name}" (interns programme: ${yesNo(o.interns_programme)}, default workspace ${o.default_workspace_id ?? 'none'})`;

export const userLine = (u: ReturnType<typeof userJson>) => {
  const orgs = u.memberships.map((m) => `${m.org_id} as ${m.role}${m.left_at ? ' (left)' : ''}`);
  return `user ${u.id} "${u.name}" (interns programme: ${yesNo(u.interns_programme)}; member of: ${orgs.join(', ') || 'none'})`;
};

export const keyLine = (k: ReturnType<typeof keyJson>) => {
  const state = k.revoked_at ? 'revoked' : k.granted ? 'active, granted' : 'active';
  return `key ${k.id} ${k.label} hash ${k.hash.slice(0, 12)}… "${k.name}" ${k.kind}, acts as ${k.acts_as}, org ${k.org_id}, created by ${k.creator_user_id} (${state})`;
};

export const membershipLine = (m: ReturnType<typeof membershipJson>) =>
  `user ${m.user_id} in organization ${m.org_id} as ${m.role}${m.left_at ? `, left at ${m.left_at}` : ''}`;
