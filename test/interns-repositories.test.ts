// Repositories given to interns (docs/guides/repositories.md), against a real git server on
// loopback (git's http-backend behind a small Node server): cloned by the gateway at create, before
// the first start, and later into a running intern; the working tree in the intern's work folder,
// its own uid's, with a plain remote; and the refusals: SSH, a credential in the URL, an unlisted
// host, file://, a climbing path, an option as a ref, a repository that does not exist, a folder
// that exists, another account's key.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { shellIn as shellRaw, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { createTestAccount } from './helpers/accounts.ts';

const shellIn = async (...a: Parameters<typeof shellRaw>) => (await shellRaw(...a)).replace(/\n?\[exit \d+\]$/, '');

describe('repositories', { skip: noSandbox }, () => {
  let f: InternFixture;
  let server: GitServer;
  let app: string;
  let lib: string;

  before(async () => {
    server = await startGitServer();
    app = server.seed('app', { 'README.md': 'hello app\n', 'src/main.js': 'console.log(1)\n' });
    lib = server.seed('lib', { 'lib.txt': 'on main\n' });
    server.git('lib', ['branch', 'feature']);
    f = await startInternFixture({
      onDisk: true,
      env: { COHORT_INTERN_DISK_MB: '64', COHORT_GIT_HOSTS: `${server.host},git.example.com` },
    });
  });
  after(async () => {
    await f?.close();
    await server?.close();
  });

  const refused = (message: string) => ({
    error: {
      code: 400,
      message: `invalid request parameters: ${message}`,
      metadata: { reason: 'bad_request', retryable: false },
    },
  });

  test('an intern created with a repository starts with its working tree, its own, with a plain remote', async () => {
    const id = await f.intern('coder', { repositories: [{ url: app }] });
    const head = server.git('app', ['rev-parse', 'HEAD']).trim();
    const out = await shellIn(
      f,
      id,
      'cd /intern/work/app && git log -1 --format=%H && cat README.md && git remote get-url origin && git status --porcelain | wc -l && stat -c %u .git/config src/main.js | sort -u && id -u',
    );
    const [commit, readme, remote, dirty, owner, uid] = out.split('\n');
    assert.deepEqual([commit, readme, remote, dirty, owner], [head, 'hello app', app, '0', uid], out);
    assert.notEqual(uid, '0');
  });

  test('a running intern is given another repository at a branch, into a folder of its choosing', async () => {
    const id = await f.intern('later');
    const r = await f.gw.call('POST', `/interns/${id}/repositories`, {
      body: { url: lib, ref: 'feature', path: 'deps/lib' },
      key: f.gw.keys.api_key,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      url: lib,
      ref: 'feature',
      path: 'deps/lib',
      commit: server.git('lib', ['rev-parse', 'feature']).trim(),
    });
    assert.equal(
      await shellIn(f, id, 'cd /intern/work/deps/lib && git branch --show-current && cat lib.txt'),
      'feature\non main',
    );
    const again = await f.gw.call('POST', `/interns/${id}/repositories`, {
      body: { url: lib, path: 'deps/lib' },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual([again.status, again.body.error.message], [409, 'resource conflict: "deps/lib" already exists']);

    const stranger = await createTestAccount(f.gw.ctx.store.db, { name: 'stranger', internsProgramme: true });
    const theirs = await f.gw.call('POST', `/interns/${id}/repositories`, {
      body: { url: lib, path: 'x' },
      key: stranger.apiKey,
    });
    assert.equal(theirs.status, 404);
  });

  test('repositories that cannot be cloned are refused naming the field, and no intern is made', async () => {
    const before = (await f.gw.call('GET', '/interns', { key: f.gw.keys.api_key })).body.total_count;
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'git@github.com:o/r.git' }, 'url: SSH repositories are not built yet; use its https:// URL'],
      [{ url: 'ssh://git@github.com/o/r.git' }, 'url: SSH repositories are not built yet; use its https:// URL'],
      [
        { url: `http://user:token@${server.host}/app.git` },
        'url: a URL carrying a credential is refused (it would stay in the intern’s .git/config); workspace git credentials are not built yet',
      ],
      [{ url: `file://${server.root}/app.git` }, 'url: must be an https:// (or http://) URL'],
      [
        { url: 'https://evil.example.com/r.git' },
        `url: host "evil.example.com" is not one this installation clones from (COHORT_GIT_HOSTS: ${server.host}, git.example.com)`,
      ],
      [{ url: app, path: '../escape' }, 'path: "../escape" climbs out of the work folder with ..'],
      [{ url: app, ref: '--upload-pack=touch /tmp/x' }, 'ref: not a branch or tag name'],
      [
        { url: `${server.url}/missing.git` },
        "url: could not clone (fatal: repository '" + `${server.url}/missing.git/' not found)`,
      ],
      [
        { url: app, ref: 'no-such-branch' },
        'url: could not clone (fatal: Remote branch no-such-branch not found in upstream origin)',
      ],
    ];
    for (const [repo, why] of cases) {
      const r = await f.gw.call('POST', '/interns', {
        body: { name: `bad-${Math.random()}`, repositories: [{ url: app, path: 'ok' }, repo] },
        key: f.gw.keys.api_key,
      });
      assert.deepEqual([r.status, r.body], [400, refused(`repositories[1].${why}`)], JSON.stringify(repo));
    }
    const overlap = await f.gw.call('POST', '/interns', {
      body: { name: 'overlap', repositories: [{ url: app }, { url: lib, path: 'app/lib' }] },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual(overlap.body, refused('repositories[1].path: "app/lib" overlaps another repository\'s folder'));
    assert.equal((await f.gw.call('GET', '/interns', { key: f.gw.keys.api_key })).body.total_count, before);
  });
});
