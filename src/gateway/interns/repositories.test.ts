// The gateway's side of repositories with real git: which URLs, refs and folders are refused
// (table by table), and bundles that do not hold what they claim (a commit whose parent the
// gateway's repository lacks, a truncated pack) refused before any ref is made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { branchRefusal, repositoryRefusal, takeBundle, targetOf } from './repositories.ts';

const HOSTS = ['github.com', '127.0.0.1:9418'];

test('repositoryRefusal: https, http or SSH to a listed host, no credential or option in the URL, a ref and a folder that stay in place', () => {
  const table: [Record<string, string>, string | null][] = [
    [{ url: 'https://github.com/o/r.git' }, null],
    [{ url: 'http://127.0.0.1:9418/r' }, null],
    [{ url: 'https://GITHUB.com/o/r', ref: 'release/1.2', path: 'src/r' }, null],
    [{ url: 'git@github.com:o/r.git' }, null],
    [{ url: 'ssh://git@127.0.0.1:9418/srv/r.git' }, null],
    [{ url: 'ssh://git@github.com:22/o/r' }, null],
    [
      { url: 'ssh://git@github.com:2222/o/r' },
      'url: host "github.com:2222" is not one this installation clones from (COHORT_GIT_HOSTS: github.com, 127.0.0.1:9418)',
    ],
    [{ url: 'ssh://-oProxyCommand=x/r' }, 'url: SSH host "-oProxyCommand=x" is not a host name'],
    [{ url: '-oProxyCommand=x@github.com:o/r' }, 'url: SSH user "-oProxyCommand=x" is not a user name'],
    [
      { url: 'git@github.com:-u/r' },
      'url: the SSH repository path must be letters, digits and . _ ~ / + @ = - (not starting with -)',
    ],
    [
      { url: 'ssh://git:pw@github.com/o/r' },
      'url: an SSH URL carrying a password is refused; give the key as a git credential',
    ],
    [{ url: 'ext::sh -c touch% /tmp/x' }, 'url: git transport helpers (`…::`) are refused'],
    [{ url: 'file:///etc' }, 'url: must be an https:// (or http://) or SSH (ssh://user@host/path, user@host:path) URL'],
    [{ url: 'not a url' }, 'url: not a URL (https://host/path, ssh://user@host/path or user@host:path)'],
    [{ url: '/srv/r.git' }, 'url: not a URL (https://host/path, ssh://user@host/path or user@host:path)'],
    [
      { url: 'https://x:tok@github.com/o/r' },
      'url: a URL carrying a credential is refused (it would stay in the intern’s .git/config); give the token as a git credential of the workspace (POST /git-credentials)',
    ],
    [{ url: 'https://github.com/o/r?x=1' }, 'url: must not have a query or fragment'],
    [
      { url: 'https://127.0.0.1:5432/r' },
      'url: host "127.0.0.1:5432" is not one this installation clones from (COHORT_GIT_HOSTS: github.com, 127.0.0.1:9418)',
    ],
    [{ url: 'https://github.com/o/r', ref: '--upload-pack=x' }, 'ref: not a branch or tag name'],
    [{ url: 'https://github.com/o/r', ref: 'a..b' }, 'ref: not a branch or tag name'],
    [{ url: 'https://github.com/o/r', ref: 'x.lock' }, 'ref: not a branch or tag name'],
    [{ url: 'https://github.com/o/r', path: '../up' }, 'path: "../up" climbs out of the work folder with ..'],
  ];
  for (const [r, why] of table) assert.equal(repositoryRefusal(r as { url: string }, HOSTS), why, JSON.stringify(r));
  assert.equal(targetOf({ url: 'https://github.com/o/tool.git/' }), 'tool');
  assert.equal(targetOf({ url: 'git@github.com:tool.git' }), 'tool');
  assert.equal(branchRefusal('cohort/x-1'), null);
  assert.equal(branchRefusal('-f'), 'not a branch name');
});

test('takeBundle: a bundle whose commits need objects the gateway lacks, or a truncated one, is refused and makes no ref', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-bundle-'));
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd,
      env,
      encoding: 'utf8',
    });
  try {
    // The gateway's copy holds `base`; the intern's history is another one entirely, whose
    // bundle starts from a commit the gateway has never seen.
    git(dir, 'init', '-q', '-b', 'main', 'origin');
    writeFileSync(join(dir, 'origin', 'a'), '1');
    git(join(dir, 'origin'), 'add', 'a');
    git(join(dir, 'origin'), 'commit', '-qm', 'base');
    git(dir, 'clone', '-q', '--bare', 'origin', 'mirror.git');
    const mirror = join(dir, 'mirror.git');
    git(dir, 'init', '-q', '-b', 'main', 'other');
    writeFileSync(join(dir, 'other', 'b'), '1');
    git(join(dir, 'other'), 'add', 'b');
    git(join(dir, 'other'), 'commit', '-qm', 'unseen');
    const unseen = git(join(dir, 'other'), 'rev-parse', 'HEAD').trim();
    writeFileSync(join(dir, 'other', 'b'), '2');
    git(join(dir, 'other'), 'commit', '-qam', 'work');
    git(join(dir, 'other'), 'bundle', 'create', '-q', join(dir, 'lacking.bundle'), `${unseen}..HEAD`);
    const lacking = await takeBundle({ mirror, bundle: join(dir, 'lacking.bundle'), timeoutMs: 10_000 });
    assert.equal(lacking.ok, false);
    assert.match((lacking as { why: string }).why, /lacks these prerequisite commits|prerequisite/);

    // A whole history, cut short: its pack does not hold the objects its header names.
    git(join(dir, 'other'), 'bundle', 'create', '-q', join(dir, 'whole.bundle'), 'HEAD');
    const whole = readFileSync(join(dir, 'whole.bundle'));
    writeFileSync(join(dir, 'cut.bundle'), whole.subarray(0, whole.length - 40));
    const cut = await takeBundle({ mirror, bundle: join(dir, 'cut.bundle'), timeoutMs: 10_000 });
    assert.equal(cut.ok, false);
    assert.equal(git(mirror, 'for-each-ref', 'refs/cohort'), '', 'no ref is left behind');

    // The same whole bundle, intact, is taken.
    const ok = await takeBundle({ mirror, bundle: join(dir, 'whole.bundle'), timeoutMs: 10_000 });
    assert.deepEqual(ok, { ok: true, commit: git(join(dir, 'other'), 'rev-parse', 'HEAD').trim() });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
