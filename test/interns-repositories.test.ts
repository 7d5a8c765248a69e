// Repositories given to interns (docs/guides/repositories.md), against a real git server on
// loopback (git's http-backend behind a small Node server): cloned by the gateway at create, before
// the first start, and later into a running intern; the working tree in the intern's work folder,
// its own uid's, with a plain remote; and the refusals: SSH without a key, a credential in the URL, an unlisted
// host, file://, a climbing path, an option as a ref, a repository that does not exist, a folder
// that exists, another account's key.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  pushInScope,
  secretSeenInside,
  shellOut as shellIn,
  startInternFixture,
  type InternFixture,
} from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { createSpawner } from '../src/shared/spawner.ts';
import { tenantJob } from '../src/gateway/interns/provisioner/tenant-job.ts';
import { createTestAccount } from './helpers/accounts.ts';
import { waitFor } from './helpers/wait.ts';

describe('repositories', { skip: noSandbox }, () => {
  const TOKEN = `tok-${process.pid}-${Date.now()}-secret`;
  let f: InternFixture;
  let server: GitServer;
  let priv: GitServer;
  let app: string;
  let lib: string;

  before(async () => {
    server = await startGitServer();
    priv = await startGitServer({ auth: { user: 'x-access-token', password: TOKEN } });
    app = server.seed('app', { 'README.md': 'hello app\n', 'src/main.js': 'console.log(1)\n' });
    lib = server.seed('lib', { 'lib.txt': 'on main\n' });
    server.git('lib', ['branch', 'feature']);
    f = await startInternFixture({
      onDisk: true,
      env: { COHORT_INTERN_DISK_MB: '64', COHORT_GIT_HOSTS: `${server.host},git.example.com,${priv.host}` },
    });
  });
  after(async () => {
    await f?.close();
    await server?.close();
    await priv?.close();
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
    assert.match(r.body.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.body, {
      id: r.body.id,
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

  test('a turn edits and commits; the diff against the base; a push to a new branch, checked on the server; hostile git config, hooks and attributes run nothing on the host', async () => {
    const id = await f.intern('pusher', { repositories: [{ url: app }] });
    const [repo] = (await f.gw.call('GET', `/interns/${id}/repositories`, { key: f.gw.keys.api_key })).body.data;
    const base = server.git('app', ['rev-parse', 'HEAD']).trim();
    assert.deepEqual(repo, { id: repo.id, url: app, ref: 'main', path: 'app', commit: base });
    const empty = await f.gw.call('GET', `/interns/${id}/repositories/${repo.id}/diff`, { key: f.gw.keys.api_key });
    assert.deepEqual(empty.body, { id: repo.id, path: 'app', base, commit: base, diff: '' });

    // What a hostile repository would run if the gateway ran git in it: every marker is a host path.
    const marker = `/tmp/cohort-pwned-${process.pid}-${Date.now()}`;
    const commit = await shellIn(
      f,
      id,
      [
        'cd /intern/work/app',
        `git config core.fsmonitor "touch ${marker}-fsmonitor"`,
        `git config diff.evil.command "touch ${marker}-diff"`,
        `git config filter.evil.smudge "touch ${marker}-smudge"`,
        `git config core.pager "touch ${marker}-pager"`,
        `git config core.sshCommand "touch ${marker}-ssh"`,
        `printf '#!/bin/sh\\ntouch ${marker}-hook\\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push`,
        'echo "* diff=evil" > .gitattributes',
        'echo change >> README.md',
        'git -c core.fsmonitor=false add -A && git -c core.fsmonitor=false -c user.name=intern -c user.email=i@example.com commit -qm "an edit by the intern"',
        'git rev-parse HEAD',
      ].join(' && '),
    );
    const diff = await f.gw.call('GET', `/interns/${id}/repositories/${repo.id}/diff`, { key: f.gw.keys.api_key });
    assert.equal(diff.status, 200, JSON.stringify(diff.body));
    assert.deepEqual([diff.body.base, diff.body.commit], [base, commit]);
    assert.match(diff.body.diff, /^diff --git a\/.gitattributes b\/.gitattributes$/m);
    assert.match(diff.body.diff, /^ hello app\n\+change$/m);

    const pushed = await f.gw.call('POST', `/interns/${id}/repositories/${repo.id}/push`, {
      body: { branch: 'cohort/feature-1' },
      key: f.gw.keys.api_key,
    });
    assert.equal(pushed.status, 200, JSON.stringify(pushed.body));
    assert.deepEqual(pushed.body, { id: repo.id, path: 'app', base, commit, branch: 'cohort/feature-1' });
    assert.equal(server.git('app', ['rev-parse', 'cohort/feature-1']).trim(), commit);
    assert.equal(server.git('app', ['show', 'cohort/feature-1:README.md']), 'hello app\nchange\n');
    assert.equal(server.git('app', ['rev-parse', 'main']).trim(), base, 'main is untouched');

    const again = await f.gw.call('POST', `/interns/${id}/repositories/${repo.id}/push`, {
      body: { branch: 'cohort/feature-1' },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual(
      [again.status, again.body.error.message],
      [
        409,
        'resource conflict: branch "cohort/feature-1" already exists on the remote; pushes go to new branches only',
      ],
    );
    const main = await f.gw.call('POST', `/interns/${id}/repositories/${repo.id}/push`, {
      body: { branch: 'main' },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual(
      [main.status, main.body.error.message],
      [
        400,
        'invalid request parameters: branch: "main" is outside the default scope: pushes create branches under cohort/',
      ],
    );
    const option = await f.gw.call('POST', `/interns/${id}/repositories/${repo.id}/push`, {
      body: { branch: '--delete' },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual(
      [option.status, option.body.error.message],
      [400, 'invalid request parameters: branch: "--delete" not a branch name'],
    );
    const auto = await f.gw.call('POST', `/interns/${id}/repositories/${repo.id}/push`, {
      body: {},
      key: f.gw.keys.api_key,
    });
    assert.match(auto.body.branch, /^cohort\/pusher-[0-9a-z]+$/);
    assert.equal(server.git('app', ['rev-parse', auto.body.branch]).trim(), commit);

    // The gateway's copy lost (a restore keeps none): the next diff clones it again from the remote.
    rmSync(join(f.gw.dataDir, 'interns', id, 'repos', `${repo.id}.git`), { recursive: true, force: true });
    const remade = await f.gw.call('GET', `/interns/${id}/repositories/${repo.id}/diff`, { key: f.gw.keys.api_key });
    assert.deepEqual([remade.status, remade.body.commit, remade.body.diff], [200, commit, diff.body.diff]);

    for (const what of ['fsmonitor', 'diff', 'smudge', 'pager', 'ssh', 'hook'])
      assert.equal(existsSync(`${marker}-${what}`), false, `${what} ran on the host`);
    const stranger = await createTestAccount(f.gw.ctx.store.db, { name: 'stranger2', internsProgramme: true });
    for (const [method, path] of [
      ['GET', `/interns/${id}/repositories`],
      ['GET', `/interns/${id}/repositories/${repo.id}/diff`],
      ['POST', `/interns/${id}/repositories/${repo.id}/push`],
    ] as const)
      assert.equal(
        (await f.gw.call(method, path, { body: method === 'POST' ? {} : undefined, key: stranger.apiKey })).status,
        404,
      );
    const unknown = await f.gw.call('GET', `/interns/${id}/repositories/00000000-0000-7000-8000-000000000000/diff`, {
      key: f.gw.keys.api_key,
    });
    assert.deepEqual([unknown.status, unknown.body.error.message], [404, 'resource not found: repository']);
  });

  test("the bundle runs under the tenant's seccomp filter, without capabilities", async () => {
    const id = await f.intern('filtered', { repositories: [{ url: app }] });
    const [repo] = (await f.gw.call('GET', `/interns/${id}/repositories`, { key: f.gw.keys.api_key })).body.data;
    // A fifo where git reads its alternates: the bundle's git waits in open() until the intern
    // opens the other end, long enough to read its status from the host.
    const uid = await shellIn(
      f,
      id,
      [
        'cd /intern/work/app && echo more >> README.md',
        'git -c user.name=i -c user.email=i@example.com commit -qam more',
        'mkfifo .git/objects/info/alternates && id -u',
      ].join(' && '),
    );
    const diff = f.gw.call('GET', `/interns/${id}/repositories/${repo.id}/diff`, { key: f.gw.keys.api_key });
    const [gitPid, status] = await waitFor(
      "the bundle's git waits on the fifo",
      () => {
        for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p)))
          try {
            const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
            const s = readFileSync(`/proc/${pid}/status`, 'utf8');
            if (cmd[0] === 'git' && cmd.includes('bundle') && new RegExp(`^Uid:\\t${uid}\\t`, 'm').test(s))
              return [Number(pid), s] as const;
          } catch {}
        return null;
      },
      { timeoutMs: 30_000, everyMs: 50 },
    );
    const field = (name: string) => status.match(new RegExp(`^${name}:\\s*(.*)$`, 'm'))?.[1];
    assert.deepEqual(
      [field('Seccomp'), field('Seccomp_filters'), field('NoNewPrivs'), field('CapEff'), field('CapBnd')],
      ['2', '1', '1', '0000000000000000', '0000000000000000'],
      status,
    );
    // The filter is the tenant's: in the same context (entered through the waiting git), a new
    // namespace is refused, as it is to the intern's shell.
    const spawner = createSpawner();
    const out = join(f.gw.dataDir, `probe-${process.pid}`);
    try {
      const probe = await spawner.run({
        ...tenantJob({
          ns: gitPid,
          cwd: '/intern/work/app',
          uid: Number(uid),
          env: {},
          argv: ['/bin/sh', '-c', 'grep ^Seccomp: /proc/self/status; unshare -U true'],
          maxFileBytes: 1 << 20,
          timeoutMs: 60_000,
        }),
        stdout: out,
      });
      assert.deepEqual(
        [probe.code, probe.stderr, readFileSync(out, 'utf8')],
        [1, 'unshare: unshare failed: Operation not permitted\n', 'Seccomp:\t2\n'],
      );
    } finally {
      spawner.close();
      rmSync(out, { force: true });
    }
    // Released: the fifo moved away (git's later readers find no alternates), then opened.
    const released =
      'cd /intern/work/app/.git/objects/info && mv alternates fifo && : > fifo && rm fifo && echo released';
    assert.equal(await shellIn(f, id, released), 'released');
    const done = await diff;
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.match(done.body.diff, /^\+more$/m);
  });

  test('a private repository through a workspace git credential: sealed, masked, scoped to its hosts and branches, never in the intern, the API or the data dir', async () => {
    const url = priv.seed('private', { 'PLAN.md': 'the plan\n' });
    const ordinary = await f.gw.call('POST', '/git-credentials', {
      body: { name: 'k', hosts: [priv.host], token: TOKEN },
      key: f.gw.keys.api_key,
    });
    assert.equal(ordinary.status, 403);

    // Without the credential the private host answers 401, and the clone is refused.
    const without = await f.gw.call('POST', '/interns', { body: { name: 'nocred', repositories: [{ url }] } });
    assert.equal(without.status, 400);
    assert.match(without.body.error.message, /^invalid request parameters: repositories\[0\]\.url: could not clone \(/);

    const made = await f.gw.call('POST', '/git-credentials', {
      body: { name: 'private host', hosts: [priv.host], token: TOKEN, branch_prefix: 'agent/' },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const cred = made.body.data;
    assert.deepEqual(cred, {
      id: cred.id,
      name: 'private host',
      workspace_id: cred.workspace_id,
      hosts: [priv.host],
      kind: 'token',
      username: 'x-access-token',
      label: `${TOKEN.slice(0, 6)}...${TOKEN.slice(-4)}`,
      branch_prefix: 'agent/',
      created_at: cred.created_at,
    });

    const id = await f.intern('private-work', { repositories: [{ url }] });
    const [repo] = (await f.gw.call('GET', `/interns/${id}/repositories`, { key: f.gw.keys.api_key })).body.data;
    const { seen, lines, commit } = await secretSeenInside(f, id, {
      secret: TOKEN,
      folder: 'private',
      file: 'PLAN.md',
      message: 'edit',
    });
    // The plain remote; no file, no environment, no process holding the token.
    assert.deepEqual(lines.slice(0, 5), ['the plan', url, '0', '0', '0'], seen);

    const pushed = await pushInScope(f, id, repo.id, 'agent/plan');
    assert.equal(priv.git('private', ['rev-parse', 'agent/plan']).trim(), commit);
    assert.ok(
      priv.hits.every((h) => h.authorized || h.authorization === undefined),
      'no wrong credential was ever sent',
    );

    // Nowhere to be read: the API's answers, and every byte of the data dir (the database, the
    // interns' disk images, daemon logs, the gateway's own repositories and spool).
    const answers = JSON.stringify([
      (await f.gw.call('GET', '/git-credentials')).body,
      (await f.gw.call('GET', `/interns/${id}`)).body,
      (await f.gw.call('GET', `/interns/${id}/repositories`, { key: f.gw.keys.api_key })).body,
      pushed.body,
    ]);
    assert.equal(answers.includes(TOKEN), false);
    const leaks = spawnSync('grep', ['-rlaF', TOKEN, f.gw.dataDir], { encoding: 'utf8' });
    assert.deepEqual([leaks.status, leaks.stdout], [1, ''], `the token is in ${leaks.stdout}`);

    const del = await f.gw.call('DELETE', `/git-credentials/${cred.id}`);
    assert.deepEqual(del.body, { deleted: true });
    assert.equal((await f.gw.call('DELETE', `/git-credentials/${cred.id}`)).status, 404);
  });

  test('repositories that cannot be cloned are refused naming the field, and no intern is made', async () => {
    const before = (await f.gw.call('GET', '/interns', { key: f.gw.keys.api_key })).body.total_count;
    const cases: [Record<string, unknown>, string][] = [
      [
        { url: 'git@git.example.com:o/r.git' },
        'url: an SSH repository needs a git credential of the workspace with an ssh_key for host "git.example.com" (POST /git-credentials)',
      ],
      [
        { url: `http://user:token@${server.host}/app.git` },
        'url: a URL carrying a credential is refused (it would stay in the intern’s .git/config); give the token as a git credential of the workspace (POST /git-credentials)',
      ],
      [
        { url: `file://${server.root}/app.git` },
        'url: must be an https:// (or http://) or SSH (ssh://user@host/path, user@host:path) URL',
      ],
      [
        { url: 'https://evil.example.com/r.git' },
        `url: host "evil.example.com" is not one this installation clones from (COHORT_GIT_HOSTS: ${server.host}, git.example.com, ${priv.host})`,
      ],
      [{ url: app, path: '../escape' }, 'path: "../escape" climbs out of the work folder with ..'],
      [{ url: app, ref: '--upload-pack=touch /tmp/x' }, 'ref: not a branch or tag name'],
      [
        { url: `${server.url}/missing.git` },
        "url: could not clone (fatal: repository '" + `${server.url}/missing.git/' not found)`,
      ],
      [
        { url: app, ref: 'no-such-branch' },
        'url: could not clone (warning: Could not find remote branch no-such-branch to clone. fatal: Remote branch no-such-branch not found in upstream origin)',
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
