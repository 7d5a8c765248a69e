// First start on an empty store: one organization, its owner (in the interns programme), the
// default workspace, one management key and one ordinary key, written to <data dir>/bootstrap.json.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { count, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { organizations } from '../store/schema.ts';
import { addMember, createKey, createOrganization, createUser, setDefaultWorkspace } from './identity-store.ts';
import { createWorkspace } from '../management/workspaces.ts';

export type Bootstrap = {
  org_id: string;
  user_id: string;
  workspace_id: string;
  management_key: string;
  api_key: string;
};

const BOOTSTRAP_LOCK = 774_211_020;

/** Seeds an empty store; returns the credentials when it did, null when the store already had an organization. */
export async function seedIfEmpty(db: Db): Promise<Bootstrap | null> {
  return db.transaction(async (txn) => {
    const tx = txn as unknown as Db;
    await tx.execute(sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
    const [existing] = await tx.select({ n: count() }).from(organizations);
    if ((existing?.n ?? 0) > 0) return null;
    const org = await createOrganization(tx, { name: 'Default organization', internsProgramme: true });
    const user = await createUser(tx, { name: 'owner', internsProgramme: true });
    await addMember(tx, { orgId: org.id, userId: user.id, role: 'owner' });
    const ws = await createWorkspace(tx, {
      orgId: org.id,
      userId: user.id,
      body: { name: 'Default', slug: 'default', default_text_model: 'local/scripted' },
    });
    await setDefaultWorkspace(tx, { orgId: org.id, workspaceId: ws.id });
    const mgmt = await createKey(tx, {
      orgId: org.id,
      creatorUserId: user.id,
      kind: 'management',
      name: 'bootstrap management key',
    });
    const std = await createKey(tx, { orgId: org.id, creatorUserId: user.id, kind: 'standard', name: 'bootstrap key' });
    return { org_id: org.id, user_id: user.id, workspace_id: ws.id, management_key: mgmt.raw, api_key: std.raw };
  });
}

export function writeBootstrapFile(dataDir: string, b: Bootstrap): string {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'bootstrap.json');
  writeFileSync(file, JSON.stringify(b, null, 2) + '\n', { mode: 0o600 });
  return file;
}
