// Administration of identity: organizations (each with its default workspace), users, memberships,
// the interns programme and API keys. Every change that alters what a key resolves to is
// announced, so cached resolutions (here and in other gateways) are dropped at once.
import type { Db } from '../store/db.ts';
import * as store from './identity-store.ts';
import { adminConflict, resourceNotFound } from '../errors.ts';
import { createWorkspace, findWorkspace } from '../management/workspaces.ts';

export type Admin = {
  db: Db;
  /** Drops cached resolutions of one key hash, or of every key when null. */
  announce(keyHash: string | null): Promise<void>;
};

/** A refusal of an administrative action: a conflict with the current state (not a usage error). */

/** Who created the default workspace of an organization made without a user (shown as `created_by`). */
export const ADMIN_CREATOR = 'cohort-admin';

export async function createOrganization(a: Admin, opts: { name: string; internsProgramme: boolean }) {
  return a.db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    const org = await store.createOrganization(tx, opts);
    const ws = await createWorkspace(tx, {
      orgId: org.id,
      userId: ADMIN_CREATOR,
      body: { name: 'Default', slug: 'default' },
    });
    await store.setDefaultWorkspace(tx, { orgId: org.id, workspaceId: ws.id });
    return { ...org, defaultWorkspaceId: ws.id };
  });
}

async function organization(db: Db, id: string) {
  const org = await store.findOrganization(db, id);
  if (!org) throw resourceNotFound(`organization ${id}`);
  return org;
}

async function user(db: Db, id: string) {
  const row = await store.findUser(db, id);
  if (!row) throw resourceNotFound(`user ${id}`);
  return row;
}

export async function createUser(
  a: Admin,
  opts: { name: string; internsProgramme: boolean; orgId?: string; role?: string },
) {
  return a.db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    if (opts.orgId) await organization(tx, opts.orgId);
    const row = await store.createUser(tx, opts);
    if (opts.orgId) await store.addMember(tx, { orgId: opts.orgId, userId: row.id, role: opts.role });
    return row;
  });
}

export async function addMember(a: Admin, opts: { orgId: string; userId: string; role?: string }) {
  await organization(a.db, opts.orgId);
  await user(a.db, opts.userId);
  const row = await store.addMember(a.db, opts);
  await a.announce(null); // a returning member's keys work again
  return row;
}

export async function removeMember(a: Admin, opts: { orgId: string; userId: string }) {
  if (!(await store.removeMember(a.db, opts))) throw resourceNotFound(`membership of ${opts.userId} in ${opts.orgId}`);
  await a.announce(null);
  return (await store.findMembership(a.db, opts))!;
}

export async function setProgramme(a: Admin, opts: { userId?: string; orgId?: string; member: boolean }) {
  if (opts.userId) await user(a.db, opts.userId);
  else await organization(a.db, opts.orgId!);
  await store.setProgramme(a.db, opts);
  await a.announce(null);
}

export async function createKey(
  a: Admin,
  opts: { orgId: string; userId: string; management: boolean; actsAs: store.ActsAs; workspace?: string; name?: string },
) {
  await organization(a.db, opts.orgId);
  const member = await store.findMembership(a.db, opts);
  if (!member || member.leftAt)
    throw adminConflict(`user ${opts.userId} is not a member of organization ${opts.orgId}`);
  const ws = opts.workspace ? await findWorkspace(a.db, { orgId: opts.orgId, idOrSlug: opts.workspace }) : null;
  return store.createKey(a.db, {
    orgId: opts.orgId,
    creatorUserId: opts.userId,
    kind: opts.management ? 'management' : 'standard',
    actsAs: opts.actsAs,
    name: opts.name,
    workspaceId: ws?.id ?? null,
  });
}

export async function revokeKey(a: Admin, id: string) {
  const row = await store.revokeKey(a.db, id);
  if (!row) {
    const existing = await store.findKey(a.db, id);
    throw existing ? adminConflict(`key ${id} is already revoked`) : resourceNotFound(`key ${id}`);
  }
  await a.announce(row.hash);
  return row;
}

export async function grantKey(a: Admin, opts: { id: string; granted: boolean }) {
  const row = await store.grantKey(a.db, opts);
  if (!row) throw resourceNotFound(`key ${opts.id}`);
  await a.announce(row.hash);
  return row;
}

export async function listUsers(db: Db) {
  const [users, memberships] = await Promise.all([store.listUsers(db), store.listMemberships(db)]);
  return users.map((u) => ({ ...u, memberships: memberships.filter((m) => m.userId === u.id) }));
}

export async function userWithMemberships(db: Db, id: string) {
  return { ...(await user(db, id)), memberships: await store.listMemberships(db, id) };
}

export const listOrganizations = store.listOrganizations;
export const listKeys = store.listKeys;
