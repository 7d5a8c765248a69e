// Repositories an intern is given (docs/guides/repositories.md): the gateway clones each in a
// clean repository of its own, outside every sandbox (git with no system or global config, no
// hooks, no redirects, https, http or SSH (git-url.ts) only, and only from the hosts the operator
// lists in COHORT_GIT_HOSTS), then places the working tree, .git included, in the intern's work folder:
// unpacked by GNU tar inside the intern's own view as its uid (provisioner/files-op.mjs), as a
// folder upload is. The URL is checked first (repositoryRefusal, pure): one carrying a credential
// is refused, since it would stay in the intern's .git/config. What reaches the remote (a token,
// an SSH key and its pinned host keys) is the caller's `env` (git-credentials.ts, gitAccessFor).
// May import: the error registry, ./files-checks.ts (path checks), ./git-url.ts, node built-ins.
import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Repository } from './repositories.schemas.ts';
import { scrub } from '../../shared/log.ts';
import { fileTooLarge, invalidRequest } from '../errors.ts';
import { pathRefusal } from './files-checks.ts';
import { gitRemoteOf } from './git-url.ts';

/** A ref git accepts as a branch or tag name, and nothing an option parser could take. */
const REF = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/+-]+$/;

/** The folder a repository goes to: its `path`, or the URL's last name without `.git`. */
export function targetOf(r: Repository): string {
  if (r.path) return r.path.replace(/\/+$/, '');
  const last =
    r.url
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '')
      .split(/[/:]/)
      .at(-1) ?? '';
  return last.replace(/\.git$/, '');
}

/** Why repository `r` cannot be cloned (`field: why`, the field relative to the repository), or null. */
export function repositoryRefusal(r: Repository, hosts: readonly string[]): string | null {
  const remote = gitRemoteOf(r.url);
  if ('refused' in remote) return `url: ${remote.refused}`;
  if (remote.transport === 'http') {
    const url = new URL(r.url);
    if (url.username || url.password)
      return 'url: a URL carrying a credential is refused (it would stay in the intern’s .git/config); give the token as a git credential of the workspace (POST /git-credentials)';
    if (url.search || url.hash) return 'url: must not have a query or fragment';
  }
  if (!hosts.includes(remote.host))
    return `url: host "${remote.host}" is not one this installation clones from (COHORT_GIT_HOSTS: ${hosts.join(', ') || 'none'})`;
  if (r.ref !== undefined && (!REF.test(r.ref) || r.ref.endsWith('/') || r.ref.endsWith('.lock')))
    return 'ref: not a branch or tag name';
  const target = targetOf(r);
  if (!target) return 'path: the URL names no folder; give path';
  const why = pathRefusal(target);
  return why ? `path: "${target}" ${why}` : null;
}

/** How the `i`th repository of `field` is named in a refusal: `repositories[1]`, or `body` for
 * the one a request's body is. */
export const fieldOf = (field: string, i: number) => (field === 'body' ? field : `${field}[${i}]`);

/** Refuses the first repository of `list` that cannot be cloned, naming it (`repositories[1].url: …`). */
export function checkRepositories(list: Repository[], hosts: readonly string[], field = 'repositories'): void {
  const targets = new Set<string>();
  list.forEach((r, i) => {
    const why = repositoryRefusal(r, hosts);
    if (why) throw invalidRequest(`${fieldOf(field, i)}.${why}`);
    const t = targetOf(r);
    if ([...targets].some((o) => o === t || t.startsWith(`${o}/`) || o.startsWith(`${t}/`)))
      throw invalidRequest(`${fieldOf(field, i)}.path: "${t}" overlaps another repository's folder`);
    targets.add(t);
  });
}

/** git as the gateway runs it: nothing of this machine's or user's configuration, no prompts. */
const GIT_ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_ALLOW_PROTOCOL: 'http:https',
  LANG: 'C',
};
const GIT_SAFE = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'http.followRedirects=false',
  '-c',
  'protocol.file.allow=never',
];

function git(args: string[], o: { cwd: string; timeoutMs: number; env?: Record<string, string> }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...GIT_SAFE, ...args],
      { cwd: o.cwd, env: { ...GIT_ENV, HOME: o.cwd, ...o.env }, timeout: o.timeoutMs, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        // The last two lines say what failed (`lacks these prerequisite commits:` and which); never
        // the command line, which a credential may one day be on.
        // git's advice after an SSH failure ("Please make sure you have the correct access rights /
        // and the repository exists.") is left out: ssh's own line before it says what failed.
        const lines = String(stderr)
          .split('\n')
          .map((l) => l.trim())
          .filter(
            (l) => l && !/^(Please make sure you have the correct access rights|and the repository exists\.)$/.test(l),
          );
        const last = lines.length ? lines.slice(-2).join(' ') : err.killed ? 'timed out' : 'git failed';
        reject(new Error(scrub(last).slice(0, 300)));
      },
    );
  });
}

/** Bytes of everything under `dir`, not following links. */
function sizeOf(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isFile()) total += lstatSync(join(e.parentPath, e.name)).size;
  return total;
}

export type Cloned = {
  tar: string;
  commit: string;
  ref: string;
  /** The gateway's own bare repository of the remote: what diffs and pushes are made in. */
  mirror: string;
  release(): void;
};

/** Clones `r` into a clean bare repository of the gateway's under `spoolDir` (its mirror), checks
 * the working tree out of that, and packs it (.git included, its remote the plain URL) as a tar
 * stream (a file) for the intern's disk. Refusals name `field` (`repositories[0].url: …`). */
export async function cloneRepository(
  r: Repository,
  o: { spoolDir: string; maxBytes: number; timeoutMs: number; field: string; env?: Record<string, string> },
): Promise<Cloned> {
  mkdirSync(o.spoolDir, { recursive: true, mode: 0o700 });
  const dir = mkdtempSync(join(o.spoolDir, 'clone-'));
  const release = () => rmSync(dir, { recursive: true, force: true });
  try {
    const mirror = join(dir, 'mirror.git');
    const repo = join(dir, 'repo');
    const branch = r.ref ? ['--branch', r.ref] : [];
    try {
      // The credential (if any) is in this git's environment only: the mirror's config keeps none.
      await git(['clone', '--quiet', '--bare', '--single-branch', ...branch, '--', r.url, mirror], {
        cwd: dir,
        timeoutMs: o.timeoutMs,
        env: o.env,
      });
    } catch (err) {
      throw invalidRequest(`${o.field}.url: could not clone (${(err as Error).message})`);
    }
    if (sizeOf(mirror) > o.maxBytes)
      throw fileTooLarge(`${o.field}: the repository exceeds the limit of ${o.maxBytes} bytes (COHORT_FILES_MAX_MB)`);
    const ref = (await git(['symbolic-ref', '--short', 'HEAD'], { cwd: mirror, timeoutMs: 10_000 })).trim();
    const commit = (await git(['rev-parse', 'HEAD'], { cwd: mirror, timeoutMs: 10_000 })).trim();
    // From the gateway's own mirror, the one local clone it makes.
    await git(['-c', 'protocol.file.allow=always', 'clone', '--quiet', '--no-hardlinks', '--', mirror, repo], {
      cwd: dir,
      timeoutMs: o.timeoutMs,
      env: { GIT_ALLOW_PROTOCOL: 'file' },
    });
    await git(['remote', 'set-url', 'origin', r.url], { cwd: repo, timeoutMs: 10_000 });
    const tar = join(dir, 'tree.tar');
    await new Promise<void>((resolve, reject) =>
      execFile('tar', ['--create', `--file=${tar}`, '--format=gnu', '--numeric-owner', '-C', repo, '.'], (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    return { tar, commit, ref, mirror, release };
  } catch (err) {
    release();
    throw err;
  }
}

/** The gateway's bare copy of `url` made again at `mirror` (one lost with a restore, which keeps
 * none): every branch, so the base commit is there if the remote still has it. */
export async function cloneMirror(o: { url: string; mirror: string; timeoutMs: number; env?: Record<string, string> }) {
  const tmp = `${o.mirror}.new-${Date.now()}`;
  mkdirSync(join(o.mirror, '..'), { recursive: true, mode: 0o700 });
  try {
    await git(['clone', '--quiet', '--bare', '--', o.url, tmp], {
      cwd: join(o.mirror, '..'),
      timeoutMs: o.timeoutMs,
      env: o.env,
    });
    renameSync(tmp, o.mirror);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Why a bundle from the intern does not hold the work it claims (refused, naming what is
 * missing), or the commit it brings: checked with `git bundle verify` and fetched (objects
 * verified, connectivity checked) into `mirror`, the gateway's own repository, under a ref of its
 * own. Nothing of the intern's repository but this data reaches the gateway's git. */
export async function takeBundle(o: {
  mirror: string;
  bundle: string;
  timeoutMs: number;
}): Promise<{ ok: true; commit: string } | { ok: false; why: string }> {
  // A bundle is read as a file: the one file transport the gateway uses, on its own spool file.
  try {
    await git(['-c', 'protocol.file.allow=always', 'bundle', 'verify', o.bundle], {
      cwd: o.mirror,
      timeoutMs: o.timeoutMs,
      env: { GIT_ALLOW_PROTOCOL: 'file' },
    });
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
  const ref = `refs/cohort/work-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    await git(['-c', 'protocol.file.allow=always', 'fetch', '--quiet', '--no-tags', '--', o.bundle, `HEAD:${ref}`], {
      cwd: o.mirror,
      timeoutMs: o.timeoutMs,
      env: { GIT_ALLOW_PROTOCOL: 'file' },
    });
    const commit = (
      await git(['rev-parse', '--verify', `${ref}^{commit}`], { cwd: o.mirror, timeoutMs: 10_000 })
    ).trim();
    return { ok: true, commit };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  } finally {
    await git(['update-ref', '-d', ref], { cwd: o.mirror, timeoutMs: 10_000 }).catch(() => {});
  }
}

/** The change from `base` to `commit` in the gateway's own repository (no external diff, no
 * textconv: a repository's .gitattributes names drivers only the gateway's config could define). */
export function diffOf(o: { mirror: string; base: string; commit: string; timeoutMs: number }): Promise<string> {
  return git(['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--binary', o.base, o.commit, '--'], {
    cwd: o.mirror,
    timeoutMs: o.timeoutMs,
  });
}

/** Pushes `commit` from the gateway's repository to a new branch of the remote: one that exists
 * already is refused by the remote's own check (a lease expecting no branch). */
export async function pushBranch(o: {
  mirror: string;
  url: string;
  commit: string;
  branch: string;
  timeoutMs: number;
  env?: Record<string, string>;
}): Promise<{ ok: true } | { ok: false; why: string; exists: boolean }> {
  const ref = `refs/heads/${o.branch}`;
  try {
    const there = await git(['ls-remote', '--', o.url, ref], { cwd: o.mirror, timeoutMs: o.timeoutMs, env: o.env });
    if (there.trim()) return { ok: false, why: 'the branch exists', exists: true };
    await git(['push', '--quiet', '--porcelain', `--force-with-lease=${ref}:`, '--', o.url, `${o.commit}:${ref}`], {
      cwd: o.mirror,
      timeoutMs: o.timeoutMs,
      env: o.env,
    });
    return { ok: true };
  } catch (err) {
    const why = (err as Error).message;
    return { ok: false, why, exists: /stale info/.test(why) };
  }
}

/** A branch name the gateway may push to: a ref name, and nothing an option parser could take. */
export const branchRefusal = (b: string): string | null =>
  !REF.test(b) || b.endsWith('/') || b.endsWith('.lock') || b.length > 200 ? 'not a branch name' : null;
