// Repositories over SSH (docs/guides/repositories.md), against a real sshd on loopback with a host
// key of its own (test/helpers/ssh-server.ts): a workspace credential holding a sealed SSH key and
// the host's pinned key; the clone at create, a turn that commits, the diff, the push to a new
// branch checked on the server; a key the server does not know and a host answering with another
// key, each a clear refusal; hostile SSH URLs refused naming the field; and the key looked for in
// the API's answers, the intern's files, environment and processes, the gateway's log, the data
// dir and the host's temporary directory once the gateway's git is done.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { createServer, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import {
  pushInScope,
  secretSeenInside,
  shellOut as shellIn,
  startInternFixture,
  type InternFixture,
} from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { noSshd, startSshServer, type SshServer } from './helpers/ssh-server.ts';
import { waitFor } from './helpers/wait.ts';

/** The key's secret part, as it would be found: one line of its base64 body. */
const secretLine = (key: string) => key.split('\n')[2]!;
const keyDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith('cohort-ssh-'));
/** The gateway's git time limit here: short enough to wait for, long enough for a loaded machine's clone. */
const GIT_TIMEOUT_MS = 10_000;
/** The host processes whose command line names `needle`. */
const processesNaming = (needle: string) =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(needle);
      } catch {
        return false;
      }
    });

describe('repositories over SSH', { skip: noSshd || noSandbox }, () => {
  let f: InternFixture;
  let sshd: SshServer;
  let app: string;
  let log = '';
  // A host that accepts connections and never says a word.
  let silent: Server;
  let silentHost = '';
  const held: Socket[] = [];

  before(async () => {
    silent = createServer((c) => held.push(c.on('error', () => {})));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    silentHost = `127.0.0.1:${(silent.address() as { port: number }).port}`;
    sshd = await startSshServer();
    app = sshd.seed('app', { 'README.md': 'hello over ssh\n' });
    const logTo = new PassThrough();
    logTo.on('data', (d: Buffer) => {
      log += d;
    });
    f = await startInternFixture({
      onDisk: true,
      logTo,
      env: {
        COHORT_INTERN_DISK_MB: '64',
        COHORT_GIT_HOSTS: `${sshd.host},github.com,${silentHost}`,
        COHORT_GIT_TIMEOUT_MS: String(GIT_TIMEOUT_MS),
        LOG_LEVEL: 'debug',
      },
    });
  });
  after(async () => {
    await f?.close();
    await sshd?.close();
    for (const c of held) c.destroy();
    silent?.close();
  });

  const refused = (message: string) => ({
    error: {
      code: 400,
      message: `invalid request parameters: ${message}`,
      metadata: { reason: 'bad_request', retryable: false },
    },
  });
  const credential = (body: Record<string, unknown>) =>
    f.gw.call('POST', '/git-credentials', { body: { name: 'ssh', hosts: [sshd.host], ...body } });

  test('credentials holding an SSH key: checked, sealed, shown as its fingerprint only', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        { ssh_key: sshd.key },
        "known_hosts: required with ssh_key: the hosts' public keys as known_hosts lines (ssh-keyscan -p PORT HOST); no other host key is trusted",
      ],
      [
        { ssh_key: 'not a key', known_hosts: sshd.knownHosts },
        'ssh_key: not a private key ssh can use without a passphrase (OpenSSH or PEM)',
      ],
      [{ ssh_key: sshd.key, token: 'tok' }, 'ssh_key: give either token or ssh_key'],
      [{ ssh_key: sshd.key, known_hosts: '# nothing here\n' }, 'known_hosts: holds no known_hosts line'],
      [
        { ssh_key: sshd.key, known_hosts: sshd.knownHosts, username: 'git' },
        "username: an SSH key's user is the URL's (user@host:path)",
      ],
      [
        { ssh_key: sshd.key, known_hosts: `@cert-authority * ${sshd.knownHosts.split(' ').slice(1).join(' ')}` },
        'known_hosts: line 1 is not a known_hosts line ("host key-type base64-key"; markers such as @cert-authority are refused)',
      ],
      [
        { token: 'tok-1234567890', known_hosts: sshd.knownHosts },
        'known_hosts: host keys go with an ssh_key (a token is sent over https)',
      ],
    ];
    for (const [body, why] of cases) {
      const r = await credential(body);
      assert.deepEqual(
        [r.status, r.body.error.message],
        [400, `invalid request parameters: ${why}`],
        JSON.stringify(body).slice(0, 80),
      );
    }
    const encrypted = await credential({
      ssh_key: (() => {
        execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'pass phrase', '-f', `${sshd.root}/locked`]);
        return execFileSync('cat', [`${sshd.root}/locked`], { encoding: 'utf8' });
      })(),
      known_hosts: sshd.knownHosts,
    });
    assert.deepEqual(
      [encrypted.status, encrypted.body.error.message],
      [400, 'invalid request parameters: ssh_key: not a private key ssh can use without a passphrase (OpenSSH or PEM)'],
    );
    assert.equal((await f.gw.call('GET', '/git-credentials')).body.data.length, 0, 'nothing was written');
  });

  test('an SSH URL without a credential for its host is refused; hostile SSH URLs are refused naming the field', async () => {
    const marker = `/tmp/cohort-ssh-pwned-${process.pid}`;
    const cases: [string, string][] = [
      [
        app,
        `url: an SSH repository needs a git credential of the workspace with an ssh_key for host "${sshd.host}" (POST /git-credentials)`,
      ],
      ['ssh://-oProxyCommand=id/r.git', 'url: SSH host "-oProxyCommand=id" is not a host name'],
      [`ssh://-oProxyCommand=touch@${sshd.host}/r.git`, 'url: SSH user "-oProxyCommand=touch" is not a user name'],
      [`-oProxyCommand=touch@github.com:o/r.git`, 'url: SSH user "-oProxyCommand=touch" is not a user name'],
      [
        'git@github.com:--upload-pack=touch',
        'url: the SSH repository path must be letters, digits and . _ ~ / + @ = - (not starting with -)',
      ],
      [
        "git@github.com:o/r.git'; touch x'",
        'url: the SSH repository path must be letters, digits and . _ ~ / + @ = - (not starting with -)',
      ],
      [
        'ssh://git:secret@github.com/o/r.git',
        'url: an SSH URL carrying a password is refused; give the key as a git credential',
      ],
      ['ssh://git@github.com:0/o/r.git', 'url: SSH port "0" is not a port'],
      [`ext::sh -c touch% ${marker}`, 'url: git transport helpers (`…::`) are refused'],
      [`${sshd.root}/app.git`, 'url: not a URL (https://host/path, ssh://user@host/path or user@host:path)'],
      [
        `file://${sshd.root}/app.git`,
        'url: must be an https:// (or http://) or SSH (ssh://user@host/path, user@host:path) URL',
      ],
      [
        'git@evil.example.com:o/r.git',
        `url: host "evil.example.com" is not one this installation clones from (COHORT_GIT_HOSTS: ${sshd.host}, github.com, ${silentHost})`,
      ],
    ];
    for (const [url, why] of cases) {
      const r = await f.gw.call('POST', '/interns', {
        body: { name: `bad-${Math.random()}`, repositories: [{ url, path: 'r' }] },
        key: f.gw.keys.api_key,
      });
      assert.deepEqual([r.status, r.body], [400, refused(`repositories[0].${why}`)], url);
    }
    assert.equal(existsSync(marker), false);
    assert.deepEqual((await f.gw.call('GET', '/interns', { key: f.gw.keys.api_key })).body.data, []);
  });

  test('clone at create, a turn that commits, the diff, a push to a new branch checked on the server; the key is nowhere but sealed', async () => {
    const made = await credential({ ssh_key: sshd.key, known_hosts: sshd.knownHosts, branch_prefix: 'agent/' });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const fingerprint = sshd.fingerprint;
    const cred = made.body.data;
    assert.deepEqual(cred, {
      id: cred.id,
      name: 'ssh',
      workspace_id: cred.workspace_id,
      hosts: [sshd.host],
      kind: 'ssh_key',
      username: null,
      label: fingerprint,
      branch_prefix: 'agent/',
      created_at: cred.created_at,
    });

    const id = await f.intern('ssh-coder', { repositories: [{ url: app }] });
    const [repo] = (await f.gw.call('GET', `/interns/${id}/repositories`, { key: f.gw.keys.api_key })).body.data;
    const base = sshd.git('app', ['rev-parse', 'HEAD']).trim();
    assert.deepEqual(repo, { id: repo.id, url: app, ref: 'main', path: 'app', commit: base });

    const secret = secretLine(sshd.key);
    const { seen, lines, commit } = await secretSeenInside(f, id, {
      secret,
      folder: 'app',
      file: 'README.md',
      message: 'over ssh',
    });
    // The plain remote; no file, no environment, no process holding the key.
    assert.deepEqual(lines.slice(0, 5), ['hello over ssh', app, '0', '0', '0'], seen);

    const diff = await f.gw.call('GET', `/interns/${id}/repositories/${repo.id}/diff`, { key: f.gw.keys.api_key });
    assert.equal(diff.status, 200, JSON.stringify(diff.body));
    assert.deepEqual([diff.body.base, diff.body.commit], [base, commit]);
    assert.match(diff.body.diff, /^ hello over ssh\n\+change$/m);

    const pushed = await pushInScope(f, id, repo.id, 'agent/ssh');
    assert.deepEqual(pushed.body, { id: repo.id, path: 'app', base, commit, branch: 'agent/ssh' });
    assert.equal(sshd.git('app', ['rev-parse', 'agent/ssh']).trim(), commit);
    assert.equal(sshd.git('app', ['show', 'agent/ssh:README.md']), 'hello over ssh\nchange\n');
    assert.equal(sshd.git('app', ['rev-parse', 'main']).trim(), base, 'main is untouched');
    assert.match(
      sshd.log(),
      new RegExp(
        `Accepted publickey for \\S+ from 127\\.0\\.0\\.1 port \\d+ ssh2: ED25519 ${fingerprint.replace(/[+/]/g, '\\$&')}`,
      ),
    );

    const answers = JSON.stringify([
      made.body,
      (await f.gw.call('GET', '/git-credentials')).body,
      (await f.gw.call('GET', `/interns/${id}`)).body,
      diff.body,
      pushed.body,
    ]);
    assert.equal(answers.includes(secret), false);
    assert.equal(log.includes(secret), false, 'the key is in the log');
    assert.ok(log.length > 0, 'the log was captured');
    const leaks = spawnSync('grep', ['-rlaF', secret, f.gw.dataDir], { encoding: 'utf8' });
    assert.deepEqual([leaks.status, leaks.stdout], [1, ''], `the key is in ${leaks.stdout}`);
    assert.deepEqual(keyDirs(), [], "the gateway's key files are deleted after each git");
    await f.gw.call('DELETE', `/git-credentials/${cred.id}`);
  });

  test('a key the server does not accept, and a host answering with a key other than the pinned one, are clear refusals', async () => {
    const id = await f.intern('ssh-refused');
    const wrong = await credential({ ssh_key: sshd.wrongKey, known_hosts: sshd.knownHosts });
    assert.equal(wrong.status, 201, JSON.stringify(wrong.body));
    const denied = await f.gw.call('POST', `/interns/${id}/repositories`, {
      body: { url: app, path: 'a' },
      key: f.gw.keys.api_key,
    });
    assert.deepEqual(
      [denied.status, denied.body.error.message],
      [
        400,
        `invalid request parameters: body.url: could not clone (${userInfo().username}@127.0.0.1: Permission denied (publickey). fatal: Could not read from remote repository.)`,
      ],
    );
    await f.gw.call('DELETE', `/git-credentials/${wrong.body.data.id}`);

    const spoofed = await credential({ ssh_key: sshd.key, known_hosts: sshd.otherKnownHosts });
    assert.equal(spoofed.status, 201);
    const mitm = await f.gw.call('POST', `/interns/${id}/repositories`, {
      body: { url: app, path: 'b' },
      key: f.gw.keys.api_key,
    });
    assert.equal(mitm.status, 400);
    assert.match(
      mitm.body.error.message,
      /^invalid request parameters: body\.url: could not clone \(.*Host key verification failed\. fatal: Could not read from remote repository\.\)$/,
    );
    assert.equal(await shellIn(f, id, 'ls /intern/work | wc -l'), '0', 'nothing was placed');
    assert.deepEqual(keyDirs(), []);
    await f.gw.call('DELETE', `/git-credentials/${spoofed.body.data.id}`);
  });

  test('a host that never answers is given up at COHORT_GIT_TIMEOUT_MS, its ssh with it', async () => {
    const cred = await f.gw.call('POST', '/git-credentials', {
      body: {
        name: 'silent',
        hosts: [silentHost],
        ssh_key: sshd.key,
        known_hosts: sshd.knownHosts.replace(sshd.host.split(':')[1]!, silentHost.split(':')[1]!),
      },
    });
    assert.equal(cred.status, 201, JSON.stringify(cred.body));
    const port = silentHost.split(':')[1]!;
    const started = Date.now();
    const pending = f.gw.call('POST', '/interns', {
      body: { name: 'silent', repositories: [{ url: `ssh://git@${silentHost}/r.git` }] },
      key: f.gw.keys.api_key,
    });
    await waitFor('the ssh to the silent host runs', () => processesNaming(`\0-p\0${port}\0`).length > 0);
    const r = await pending;
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.error.message, /^invalid request parameters: repositories\[0\]\.url: could not clone \(.+\)$/);
    assert.ok(Date.now() - started < GIT_TIMEOUT_MS * 3, `given up after ${Date.now() - started} ms`);
    await waitFor('no ssh to the silent host is left', () => processesNaming(`\0-p\0${port}\0`).length === 0);
    assert.deepEqual(keyDirs(), []);
    await f.gw.call('DELETE', `/git-credentials/${cred.body.data.id}`);
  });
});
