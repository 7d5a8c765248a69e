// A workspace's credentials for git hosts (docs/guides/repositories.md): an HTTPS token or an SSH
// key sealed under the master key (bound to the credential's id) before it reaches the store,
// shown again only masked, and unsealed in memory only for the gateway's own clone or push to one
// of its `hosts`. A token travels to git in the environment (an http.extraHeader for that host
// alone), never in an argument, a URL or a repository's config. An SSH key is written 0600 in a
// private temporary directory for the one git command (deleted after it), beside a known_hosts of
// the credential's own host keys, the only ones ssh trusts: a URL naming another host, or a host
// answering with another key, fails rather than trusting a man in the middle. `branch_prefix`
// bounds which branches a push made with it may create. Management keys create, list and delete
// them (the routes).
// May import: the store, the sealer, the error registry, ./git-credentials.schemas.ts, ./git-url.ts,
// node built-ins.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Sealer } from '../crypto/seal.ts';
import { maskSecret } from '../crypto/keys.ts';
import { uuidv7 } from '../crypto/uuid7.ts';
import { gitCredentials, type GitCredentialRow } from '../store/schema-interns.ts';
import { organizations, workspaces } from '../store/schema.ts';
import { defaultWorkspaceDeleted, invalidRequest, resourceNotFound } from '../errors.ts';
import type { CreateGitCredential, GitCredential } from './git-credentials.schemas.ts';
import { gitRemoteOf } from './git-url.ts';

/** The branches a push may create when no credential of the workspace names a prefix. */
export const DEFAULT_BRANCH_PREFIX = 'cohort/';

/** An SSH key's sealed form is marked so (the table has one column for either secret): its kind
 * reads without opening it, and a sealer's own output never starts with it. */
const SSH_SEALED = 'ssh:';
const isSsh = (r: GitCredentialRow) => r.sealedToken.startsWith(SSH_SEALED);

export function toGitCredential(r: GitCredentialRow): GitCredential {
  return {
    id: r.id,
    name: r.name,
    workspace_id: r.workspaceId,
    hosts: r.hosts,
    kind: isSsh(r) ? 'ssh_key' : 'token',
    username: isSsh(r) ? null : r.username,
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
  if (b.ssh_key !== undefined && b.token !== undefined) throw invalidRequest('ssh_key: give either token or ssh_key');
  if (b.ssh_key === undefined && b.token === undefined)
    throw invalidRequest('token: required (an HTTPS token for the hosts), or ssh_key');
  if (b.token !== undefined && b.known_hosts !== undefined)
    throw invalidRequest('known_hosts: host keys go with an ssh_key (a token is sent over https)');
  const ssh = b.ssh_key === undefined ? null : await sshKeyOf(b);
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
      username: ssh ? '' : (b.username ?? 'x-access-token'),
      sealedToken: ssh
        ? SSH_SEALED + sealer.seal(JSON.stringify({ key: ssh.key, known_hosts: ssh.knownHosts }), id)
        : sealer.seal(b.token!, id),
      label: ssh ? ssh.fingerprint : maskSecret(b.token!),
      branchPrefix: b.branch_prefix ?? DEFAULT_BRANCH_PREFIX,
    })
    .returning();
  return row!;
}

/** A known_hosts line: host patterns (plain, [host]:port or hashed), a key type, the key; no
 * marker (`@cert-authority`, `@revoked`): a host is trusted by its own key alone. */
const KNOWN_HOST =
  /^(?:[A-Za-z0-9.[\]:,*?!-]+|\|1\|[A-Za-z0-9+/=]+\|[A-Za-z0-9+/=]+) ([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})(?: [^\n]*)?$/;

/** The SSH credential's checked parts: the key (one ssh-keygen reads without a passphrase; its
 * public key's fingerprint the label), the known_hosts lines. */
async function sshKeyOf(b: CreateGitCredential): Promise<{ key: string; knownHosts: string; fingerprint: string }> {
  if (b.username !== undefined) throw invalidRequest("username: an SSH key's user is the URL's (user@host:path)");
  if (b.known_hosts === undefined)
    throw invalidRequest(
      "known_hosts: required with ssh_key: the hosts' public keys as known_hosts lines (ssh-keyscan -p PORT HOST); no other host key is trusted",
    );
  const lines = b.known_hosts
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  if (!lines.length) throw invalidRequest('known_hosts: holds no known_hosts line');
  const bad = lines.findIndex((l) => !KNOWN_HOST.test(l));
  if (bad >= 0)
    throw invalidRequest(
      `known_hosts: line ${bad + 1} is not a known_hosts line ("host key-type base64-key"; markers such as @cert-authority are refused)`,
    );
  const key = `${b.ssh_key!.replace(/\r\n/g, '\n').trim()}\n`;
  const pub = await publicKeyOf(key);
  if (!pub) throw invalidRequest('ssh_key: not a private key ssh can use without a passphrase (OpenSSH or PEM)');
  const blob = Buffer.from(pub.split(' ')[1] ?? '', 'base64');
  const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  return { key, knownHosts: `${lines.join('\n')}\n`, fingerprint };
}

/** The public key of `key` as ssh-keygen derives it (from a 0600 file in a private temporary
 * directory, deleted at once: it reads no socket as its stdin), or null when it is not a key it
 * can read without a passphrase. */
async function publicKeyOf(key: string): Promise<string | null> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-ssh-'));
  try {
    writeFileSync(join(dir, 'key'), key, { mode: 0o600, flag: 'wx' });
    const out = await new Promise<string | null>((resolve) =>
      execFile('ssh-keygen', ['-y', '-P', '', '-f', join(dir, 'key')], { timeout: 10_000 }, (err, stdout) =>
        resolve(err ? null : stdout),
      ),
    );
    return out && /^[a-z0-9@.-]+ [A-Za-z0-9+/=]+/.test(out) ? out.trim() : null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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

/** What the gateway's git reaches a remote with: its environment, the branch prefix a push may
 * use, the credential's id (null: none), and `release`, which deletes what was written for it. */
export type GitAccess = {
  env: Record<string, string>;
  branchPrefix: string;
  credential: string | null;
  release(): void;
};

/** What the gateway's git needs to reach `url` for a workspace: the credential of the workspace
 * listing the URL's host (the oldest such of the URL's kind: a token for https, an SSH key for
 * SSH) and the branch prefix a push may use. No credential: none, and the default prefix; an SSH
 * URL without one is refused (`field`.url), since ssh would otherwise reach for this machine's
 * own keys and host keys. */
export async function gitAccessFor(
  db: Db,
  sealer: Sealer,
  o: { orgId: string; workspaceId: string | null; url: string; field: string; timeoutMs: number },
): Promise<GitAccess> {
  const remote = gitRemoteOf(o.url);
  if ('refused' in remote) throw invalidRequest(`${o.field}.url: ${remote.refused}`);
  const ssh = remote.transport === 'ssh';
  const rows = o.workspaceId
    ? await db
        .select()
        .from(gitCredentials)
        .where(and(eq(gitCredentials.orgId, o.orgId), eq(gitCredentials.workspaceId, o.workspaceId)))
        .orderBy(asc(gitCredentials.createdAt))
    : [];
  const row = rows.find((r) => r.hosts.includes(remote.host) && isSsh(r) === ssh);
  if (!row && ssh)
    throw invalidRequest(
      `${o.field}.url: an SSH repository needs a git credential of the workspace with an ssh_key for host "${remote.host}" (POST /git-credentials)`,
    );
  if (!row) return { env: {}, branchPrefix: DEFAULT_BRANCH_PREFIX, credential: null, release: () => {} };
  if (ssh) {
    const sealed = JSON.parse(sealer.open(row.sealedToken.slice(SSH_SEALED.length), row.id)) as {
      key: string;
      known_hosts: string;
    };
    const dir = mkdtempSync(join(tmpdir(), 'cohort-ssh-'));
    try {
      writeFileSync(join(dir, 'key'), sealed.key, { mode: 0o600, flag: 'wx' });
      writeFileSync(join(dir, 'known_hosts'), sealed.known_hosts, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return {
      env: {
        GIT_ALLOW_PROTOCOL: 'ssh',
        GIT_SSH_VARIANT: 'ssh',
        GIT_SSH_COMMAND: sshCommand({ dir, timeoutMs: o.timeoutMs }),
      },
      branchPrefix: row.branchPrefix,
      credential: row.id,
      release: () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const token = sealer.open(row.sealedToken, row.id);
  const basic = Buffer.from(`${row.username}:${token}`).toString('base64');
  const url = new URL(o.url);
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
    release: () => {},
  };
}

/** ssh as the gateway's git runs it (a shell line, as git takes GIT_SSH_COMMAND): no user or
 * system configuration, the one key and no agent, no prompt, only the credential's host keys
 * (an unknown or changed one fails), no forwarding, a bounded connect, and killed at the git
 * time limit itself (the limit on git ends git alone, and a server that stops answering would
 * hold its ssh). */
function sshCommand(o: { dir: string; timeoutMs: number }): string {
  const quoted = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  return [
    `timeout -s KILL ${Math.max(1, Math.ceil(o.timeoutMs / 1000))}`,
    'ssh',
    '-F /dev/null',
    `-i ${quoted(join(o.dir, 'key'))}`,
    '-o IdentitiesOnly=yes',
    '-o IdentityAgent=none',
    '-o BatchMode=yes',
    '-o PasswordAuthentication=no',
    '-o KbdInteractiveAuthentication=no',
    '-o StrictHostKeyChecking=yes',
    `-o UserKnownHostsFile=${quoted(join(o.dir, 'known_hosts'))}`,
    '-o GlobalKnownHostsFile=/dev/null',
    '-o UpdateHostKeys=no',
    '-o ForwardAgent=no',
    '-o ForwardX11=no',
    '-o ClearAllForwardings=yes',
    '-o ControlMaster=no',
    '-o ControlPath=none',
    `-o ConnectTimeout=${Math.max(1, Math.ceil(Math.min(o.timeoutMs, 60_000) / 1000))}`,
  ].join(' ');
}
