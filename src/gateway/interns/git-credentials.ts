// A workspace's credentials for git hosts (docs/guides/repositories.md): an HTTPS token sealed
// under the master key (bound to the credential's id) before it reaches the store, shown again
// only masked, and unsealed in memory only for the gateway's own clone or push to one of its
// `hosts`, where it travels to git in the environment (an http.extraHeader for that host alone),
// never in an argument, a URL or a repository's config. `branch_prefix` bounds which branches a
// push made with it may create. Management keys create, list and delete them (the routes).
// May import: the store, the sealer, the error registry, ./git-credentials.schemas.ts.
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Sealer } from '../crypto/seal.ts';
import { maskSecret } from '../crypto/keys.ts';
import { uuidv7 } from '../crypto/uuid7.ts';
import { gitCredentials, type GitCredentialRow } from '../store/schema-interns.ts';
import { organizations, workspaces } from '../store/schema.ts';
import { defaultWorkspaceDeleted, invalidRequest, resourceNotFound } from '../errors.ts';
import type { CreateGitCredential, GitCredential } from './git-credentials.schemas.ts';

/** The branches a push may create when no credential of the workspace names a prefix. */
export const DEFAULT_BRANCH_PREFIX = 'cohort/';

export function toGitCredential(r: GitCredentialRow): GitCredential {
  return {
    id: r.id,
    name: r.name,
    workspace_id: r.workspaceId,
    hosts: r.hosts,
    username: r.username,
    label: r.label,
    branch_prefix: r.branchPrefix,
    created_at: r.createdAt.toISOString(),
  };
}

async function workspaceOf(db: Db, orgId: string, given?: string): Promise<string> {
  if (given) {
    const [ws] = await db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(and(eq(workspaces.id, given.toLowerCase()), eq(workspaces.orgId, orgId)));
    if (!ws) throw invalidRequest('workspace_id: no such workspace in this account');
    return ws.id;
  }
  const [ws] = await db
    .select({ id: workspaces.id })
    .from(organizations)
    .innerJoin(workspaces, eq(workspaces.id, organizations.defaultWorkspaceId))
    .where(eq(organizations.id, orgId));
  if (!ws) throw defaultWorkspaceDeleted();
  return ws.id;
}

export async function createGitCredential(
  db: Db,
  sealer: Sealer,
  o: { orgId: string; body: CreateGitCredential },
): Promise<GitCredentialRow> {
  const b = o.body;
  if (b.ssh_key !== undefined) throw invalidRequest('ssh_key: SSH keys are not built yet; give an HTTPS token');
  if (b.token === undefined) throw invalidRequest('token: required (an HTTPS token for the hosts)');
  const workspaceId = await workspaceOf(db, o.orgId, b.workspace_id);
  const id = uuidv7();
  const [row] = await db
    .insert(gitCredentials)
    .values({
      id,
      orgId: o.orgId,
      workspaceId,
      name: b.name,
      hosts: [...new Set(b.hosts.map((h) => h.toLowerCase()))],
      username: b.username ?? 'x-access-token',
      sealedToken: sealer.seal(b.token, id),
      label: maskSecret(b.token),
      branchPrefix: b.branch_prefix ?? DEFAULT_BRANCH_PREFIX,
    })
    .returning();
  return row!;
}

export async function listGitCredentials(
  db: Db,
  o: { orgId: string; workspaceId?: string },
): Promise<GitCredentialRow[]> {
  const workspaceId = await workspaceOf(db, o.orgId, o.workspaceId);
  return db
    .select()
    .from(gitCredentials)
    .where(and(eq(gitCredentials.orgId, o.orgId), eq(gitCredentials.workspaceId, workspaceId)))
    .orderBy(asc(gitCredentials.createdAt));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function deleteGitCredential(db: Db, o: { orgId: string; id: string }): Promise<void> {
  if (!UUID.test(o.id)) throw resourceNotFound('git credential');
  const gone = await db
    .delete(gitCredentials)
    .where(and(eq(gitCredentials.orgId, o.orgId), eq(gitCredentials.id, o.id.toLowerCase())))
    .returning({ id: gitCredentials.id });
  if (!gone.length) throw resourceNotFound('git credential');
}

/** What the gateway's git needs to reach `url` for a workspace: the environment that gives git
 * the credential of the workspace listing the URL's host (the oldest such), and the branch prefix
 * a push may use. No credential: none, and the default prefix. */
export async function gitAccessFor(
  db: Db,
  sealer: Sealer,
  o: { orgId: string; workspaceId: string; url: string },
): Promise<{ env: Record<string, string>; branchPrefix: string; credential: string | null }> {
  const url = new URL(o.url);
  const host = url.host.toLowerCase();
  const rows = await db
    .select()
    .from(gitCredentials)
    .where(and(eq(gitCredentials.orgId, o.orgId), eq(gitCredentials.workspaceId, o.workspaceId)))
    .orderBy(asc(gitCredentials.createdAt));
  const row = rows.find((r) => r.hosts.includes(host));
  if (!row) return { env: {}, branchPrefix: DEFAULT_BRANCH_PREFIX, credential: null };
  const token = sealer.open(row.sealedToken, row.id);
  const basic = Buffer.from(`${row.username}:${token}`).toString('base64');
  return {
    // git reads configuration from the environment (GIT_CONFIG_COUNT): the header is for this
    // host's URLs alone, and lives only in the environment of the git the gateway runs.
    env: {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: `http.${url.protocol}//${url.host}/.extraHeader`,
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    },
    branchPrefix: row.branchPrefix,
    credential: row.id,
  };
}
