// Where each step of an intern's repositories happens (repositories.ts does the gateway's git,
// docs/guides/repositories.md): the clone made by the gateway and placed through the intern's
// view, the bundle of its work made in its sandbox, the gateway's own copy of each repository in
// the intern's host directory (<data dir>/interns/<id>/repos/<repo id>.git), and the push from it.
// May import: files-context.ts, files-checks.ts, repositories.ts, git-credentials.ts, the provisioner's files, the store, the error registry, node built-ins.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { and, eq } from 'drizzle-orm';
import { uuidv7 } from '../crypto/uuid7.ts';
import { gitHostRefused, invalidRequest, repositoryConflict, resourceNotFound } from '../errors.ts';
import { internRepositories, type InternRepositoryRow, type InternRow } from '../store/schema-interns.ts';
import { refusalOf } from './files-checks.ts';
import { type FilesContext, spoolPath, writableView } from './files-context.ts';
import { gitAccessFor } from './git-credentials.ts';
import { bundleIn, fileOp } from './provisioner/files.ts';
import {
  branchRefusal,
  checkRepositories,
  cloneMirror,
  cloneRepository,
  diffOf,
  fieldOf,
  pushBranch,
  takeBundle,
  targetOf,
  type Cloned,
} from './repositories.ts';
import type { Repository } from './repositories.schemas.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whose git credentials a clone may use. */
export type Workspace = { orgId: string; workspaceId: string | null };
/** Repositories cloned, waiting to be placed; `release` removes the clones. */
export type ClonedSet = { list: Repository[]; cloned: Cloned[]; release(): void };
export type PlacedRepository = { id: string; url: string; ref: string; path: string; commit: string };
export type RepositoryWork = { id: string; path: string; base: string; commit: string };

/** A request about one repository of an intern. */
type OnRepository = { row: InternRow; repoId: string; account: string; signal: AbortSignal };

const workspaceOf = (row: InternRow): Workspace => ({ orgId: row.orgId, workspaceId: row.workspaceId });
const mirrorOf = (c: FilesContext, internId: string, repoId: string) =>
  join(c.internsDir, internId, 'repos', `${repoId}.git`);
const placedOf = (r: InternRepositoryRow): PlacedRepository => ({
  id: r.id,
  url: r.url,
  ref: r.ref,
  path: r.path,
  commit: r.baseCommit,
});

/** The branch a push makes when none is asked for: the intern's name, made safe, and the time. */
export const defaultBranch = (name: string, now: number): string =>
  `cohort/${name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .slice(0, 60)}-${now.toString(36)}`;

/** What gives the gateway's git the workspace's credential for `url` (released after use). */
const accessFor = (c: FilesContext, o: { workspace: Workspace; url: string; field?: string }) =>
  gitAccessFor(c.db, c.sealer, {
    orgId: o.workspace.orgId,
    workspaceId: o.workspace.workspaceId,
    url: o.url,
    field: o.field ?? 'body',
    timeoutMs: c.git.timeoutMs,
  });

/** Clones every repository of `list` (a failure keeps none). */
export async function cloneRepositories(
  c: FilesContext,
  o: { list: Repository[]; field: string; workspace: Workspace },
): Promise<ClonedSet> {
  checkRepositories(o.list, c.git.hosts, o.field);
  const cloned: Cloned[] = [];
  const release = () => {
    for (const one of cloned) one.release();
  };
  try {
    for (const [i, r] of o.list.entries()) {
      const field = fieldOf(o.field, i);
      const access = await accessFor(c, { workspace: o.workspace, url: r.url, field });
      try {
        const { env } = access;
        cloned.push(
          await cloneRepository(r, {
            spoolDir: c.spoolDir,
            maxBytes: c.limits.maxBytes,
            timeoutMs: c.git.timeoutMs,
            field,
            env,
          }),
        );
      } finally {
        access.release();
      }
    }
  } catch (err) {
    release();
    throw err;
  }
  return { list: o.list, cloned, release };
}

/** Places each clone of `set` in its folder of the work folder: into a running intern (woken if
 * asleep), or (`created`) into the disk of an intern never started; the gateway keeps its copy. */
export async function placeRepositories(
  c: FilesContext,
  o: { row: InternRow; set: ClonedSet; account: string; signal: AbortSignal; created: boolean },
): Promise<PlacedRepository[]> {
  const view = o.created ? await c.provisioner.prepareDisk(o.row.id) : await writableView(c, o);
  const placed: PlacedRepository[] = [];
  try {
    for (const [i, r] of o.set.list.entries()) {
      const path = targetOf(r);
      const cloned = o.set.cloned[i]!;
      const res = await fileOp({ view: view.view, uid: view.uid, args: ['unpack', path, 'fresh'], stdin: cloned.tar });
      if (!res.ok) throw refusalOf(res, { fallback: path, maxBytes: c.limits.maxBytes, log: c.log });
      const id = uuidv7();
      const mirror = mirrorOf(c, o.row.id, id);
      mkdirSync(join(mirror, '..'), { recursive: true, mode: 0o700 });
      renameSync(cloned.mirror, mirror);
      await c.db
        .insert(internRepositories)
        .values({ id, internId: o.row.id, url: r.url, ref: cloned.ref, path, baseCommit: cloned.commit });
      placed.push({ id, url: r.url, ref: cloned.ref, path, commit: cloned.commit });
    }
  } finally {
    await view.release();
  }
  return placed;
}

export async function listRepositories(c: FilesContext, row: InternRow): Promise<PlacedRepository[]> {
  const rows = await c.db.select().from(internRepositories).where(eq(internRepositories.internId, row.id));
  return rows.map(placedOf);
}

/** Repository `repoId` of the intern and the gateway's copy of it, made again from the remote
 * when it is not there (a restored intern's). */
async function repositoryOf(c: FilesContext, { row, repoId }: { row: InternRow; repoId: string }) {
  if (!UUID.test(repoId)) throw resourceNotFound('repository');
  const [repo] = await c.db
    .select()
    .from(internRepositories)
    .where(and(eq(internRepositories.internId, row.id), eq(internRepositories.id, repoId.toLowerCase())));
  if (!repo) throw resourceNotFound('repository');
  const mirror = mirrorOf(c, row.id, repo.id);
  if (existsSync(mirror)) return { repo, mirror };
  try {
    const access = await accessFor(c, { workspace: workspaceOf(row), url: repo.url });
    try {
      await cloneMirror({ url: repo.url, mirror, timeoutMs: c.git.timeoutMs, env: access.env });
    } finally {
      access.release();
    }
  } catch (err) {
    throw repositoryConflict(
      `the gateway's copy of "${repo.path}" could not be made again (${(err as Error).message})`,
    );
  }
  return { repo, mirror };
}

/** The intern's work in a repository: a bundle made in its sandbox, taken into the gateway's own
 * repository; `commit` is the base when there is no work. */
async function workIn(c: FilesContext, o: OnRepository) {
  const { repo, mirror } = await repositoryOf(c, o);
  const view = await writableView(c, o);
  const out = spoolPath(c.spoolDir);
  try {
    if (view.uid === null || view.view.ns === null)
      throw repositoryConflict('taking work back needs an isolated intern (COHORT_UNSAFE_NO_ISOLATION is set)');
    const { maxBytes } = c.limits;
    const { timeoutMs } = c.git;
    const made = await bundleIn({
      view: view.view,
      uid: view.uid,
      repo: repo.path,
      base: repo.baseCommit,
      out,
      maxBytes,
      timeoutMs,
    });
    if (!made.ok) {
      if (/empty bundle/.test(made.detail)) return { repo, mirror, commit: repo.baseCommit };
      throw repositoryConflict(`the intern's commits in "${repo.path}" could not be bundled (${made.detail})`);
    }
    const taken = await takeBundle({ mirror, bundle: out, timeoutMs });
    if (!taken.ok) throw repositoryConflict(`the intern's bundle of "${repo.path}" was refused (${taken.why})`);
    return { repo, mirror, commit: taken.commit };
  } finally {
    rmSync(out, { force: true });
    await view.release();
  }
}

/** The intern's committed work in a repository against its base. */
export async function diffRepository(c: FilesContext, o: OnRepository): Promise<RepositoryWork & { diff: string }> {
  const w = await workIn(c, o);
  const base = w.repo.baseCommit;
  const diff =
    w.commit === base ? '' : await diffOf({ mirror: w.mirror, base, commit: w.commit, timeoutMs: c.git.timeoutMs });
  return { id: w.repo.id, path: w.repo.path, base, commit: w.commit, diff };
}

/** The same work pushed to a new branch of the remote (`branch`, or defaultBranch's). */
export async function pushRepository(
  c: FilesContext,
  o: OnRepository & { branch?: string },
): Promise<RepositoryWork & { branch: string }> {
  const name = o.branch ?? defaultBranch(o.row.name, Date.now());
  const why = branchRefusal(name);
  if (why) throw invalidRequest(`branch: "${name}" ${why}`);
  const w = await workIn(c, o);
  const access = await accessFor(c, { workspace: workspaceOf(o.row), url: w.repo.url });
  try {
    if (!name.startsWith(access.branchPrefix))
      throw invalidRequest(
        `branch: "${name}" is outside the ${access.credential ? "credential's" : 'default'} scope: pushes create branches under ${access.branchPrefix}`,
      );
    if (w.commit === w.repo.baseCommit)
      throw repositoryConflict(
        `"${w.repo.path}" has no commits since ${w.repo.baseCommit.slice(0, 12)}: nothing to push`,
      );
    const { env } = access;
    const pushed = await pushBranch({
      env,
      mirror: w.mirror,
      url: w.repo.url,
      commit: w.commit,
      branch: name,
      timeoutMs: c.git.timeoutMs,
    });
    if (!pushed.ok) {
      if (pushed.exists)
        throw repositoryConflict(`branch "${name}" already exists on the remote; pushes go to new branches only`);
      throw gitHostRefused(pushed.why);
    }
  } finally {
    access.release();
  }
  return { id: w.repo.id, path: w.repo.path, base: w.repo.baseCommit, commit: w.commit, branch: name };
}

/** Clones every repository first (a failure places none), then places each. */
export async function addRepositories(
  c: FilesContext,
  o: { row: InternRow; list: Repository[]; account: string; signal: AbortSignal; created: boolean; field: string },
): Promise<PlacedRepository[]> {
  const set = await cloneRepositories(c, { list: o.list, field: o.field, workspace: workspaceOf(o.row) });
  try {
    return await placeRepositories(c, { ...o, set });
  } finally {
    set.release();
  }
}
