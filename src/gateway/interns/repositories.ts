// Repositories an intern is given (docs/guides/repositories.md): the gateway clones each in a
// clean repository of its own, outside every sandbox (git with no system or global config, no
// hooks, no redirects, https or http only, and only from the hosts the operator lists in
// COHORT_GIT_HOSTS), then places the working tree, .git included, in the intern's work folder:
// unpacked by GNU tar inside the intern's own view as its uid (provisioner/files-op.mjs), as a
// folder upload is. The URL is checked first (repositoryRefusal, pure): one carrying a credential
// is refused, since it would stay in the intern's .git/config.
// May import: the error registry, ./files.ts (path checks), node built-ins.
import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Repository } from './repositories.schemas.ts';
import { scrub } from '../../shared/log.ts';
import { fileTooLarge, invalidRequest } from '../errors.ts';
import { pathRefusal } from './files.ts';

/** A ref git accepts as a branch or tag name, and nothing an option parser could take. */
const REF = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/+-]+$/;

/** The folder a repository goes to: its `path`, or the URL's last name without `.git`. */
export function targetOf(r: Repository): string {
  if (r.path) return r.path.replace(/\/+$/, '');
  const last =
    r.url
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '')
      .split('/')
      .at(-1) ?? '';
  return last.replace(/\.git$/, '');
}

/** Why repository `r` cannot be cloned (`field: why`, the field relative to the repository), or null. */
export function repositoryRefusal(r: Repository, hosts: readonly string[]): string | null {
  if (/^[\w.-]+@[\w.-]+:/.test(r.url) || r.url.startsWith('ssh://') || r.url.startsWith('git+ssh://'))
    return 'url: SSH repositories are not built yet; use its https:// URL';
  let url: URL;
  try {
    url = new URL(r.url);
  } catch {
    return 'url: not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url: must be an https:// (or http://) URL';
  if (url.username || url.password)
    return 'url: a URL carrying a credential is refused (it would stay in the intern’s .git/config); workspace git credentials are not built yet';
  if (url.search || url.hash) return 'url: must not have a query or fragment';
  if (!hosts.includes(url.host.toLowerCase()))
    return `url: host "${url.host}" is not one this installation clones from (COHORT_GIT_HOSTS: ${hosts.join(', ') || 'none'})`;
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
        const last =
          String(stderr).trim().split('\n').filter(Boolean).at(-1) ?? (err.killed ? 'timed out' : err.message);
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

export type Cloned = { tar: string; commit: string; ref: string; release(): void };

/** Clones `r` into a clean repository under `spoolDir`, and packs its working tree and .git as a
 * tar stream (a file) for the intern's disk. Refusals name `field` (`repositories[0].url: …`). */
export async function cloneRepository(
  r: Repository,
  o: { spoolDir: string; maxBytes: number; timeoutMs: number; field: string },
): Promise<Cloned> {
  mkdirSync(o.spoolDir, { recursive: true, mode: 0o700 });
  const dir = mkdtempSync(join(o.spoolDir, 'clone-'));
  const release = () => rmSync(dir, { recursive: true, force: true });
  try {
    const repo = join(dir, 'repo');
    const branch = r.ref ? ['--branch', r.ref] : [];
    try {
      await git(['clone', '--quiet', '--single-branch', ...branch, '--', r.url, repo], {
        cwd: dir,
        timeoutMs: o.timeoutMs,
      });
    } catch (err) {
      throw invalidRequest(`${o.field}.url: could not clone (${(err as Error).message})`);
    }
    if (sizeOf(repo) > o.maxBytes)
      throw fileTooLarge(`${o.field}: the repository exceeds the limit of ${o.maxBytes} bytes (COHORT_FILES_MAX_MB)`);
    const commit = (await git(['rev-parse', 'HEAD'], { cwd: repo, timeoutMs: 10_000 })).trim();
    const ref = (await git(['rev-parse', '--abbrev-ref', 'HEAD'], { cwd: repo, timeoutMs: 10_000 })).trim();
    const tar = join(dir, 'tree.tar');
    await new Promise<void>((resolve, reject) =>
      execFile('tar', ['--create', `--file=${tar}`, '--format=gnu', '--numeric-owner', '-C', repo, '.'], (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    return { tar, commit, ref, release };
  } catch (err) {
    release();
    throw err;
  }
}
