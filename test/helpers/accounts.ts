// Test helper: a further account (organization, member, default workspace, one management and one
// ordinary key) created straight in the store, for cross-account and departed-member tests.
import type { Db } from '../../src/gateway/store/db.ts';
import {
  addMember,
  createKey,
  createOrganization,
  createUser,
  setDefaultWorkspace,
} from '../../src/gateway/access/identity-store.ts';
import { createWorkspace } from '../../src/gateway/management/workspaces.ts';

export type TestAccount = {
  orgId: string;
  userId: string;
  workspaceId: string;
  managementKey: string;
  managementKeyId: string;
  apiKey: string;
  apiKeyHash: string;
};

export async function createTestAccount(
  db: Db,
  opts: { name: string; orgId?: string; internsProgramme?: boolean },
): Promise<TestAccount> {
  const programme = opts.internsProgramme ?? false;
  const orgId = opts.orgId ?? (await createOrganization(db, { name: opts.name, internsProgramme: programme })).id;
  const user = await createUser(db, { name: opts.name, internsProgramme: programme });
  await addMember(db, { orgId, userId: user.id });
  let workspaceId: string;
  if (opts.orgId) {
    workspaceId = (
      await createWorkspace(db, {
        orgId,
        userId: user.id,
        body: { name: opts.name, slug: `ws-${user.id.slice(5, 13)}` },
      })
    ).id;
  } else {
    workspaceId = (await createWorkspace(db, { orgId, userId: user.id, body: { name: 'Default', slug: 'default' } }))
      .id;
    await setDefaultWorkspace(db, { orgId, workspaceId });
  }
  const mgmt = await createKey(db, { orgId, creatorUserId: user.id, kind: 'management', workspaceId });
  const std = await createKey(db, { orgId, creatorUserId: user.id, kind: 'standard', workspaceId });
  return {
    orgId,
    userId: user.id,
    workspaceId,
    managementKey: mgmt.raw,
    managementKeyId: mgmt.key.id,
    apiKey: std.raw,
    apiKeyHash: std.key.hash,
  };
}
