// `cohort chat` driven as a child process with piped stdin, against a real gateway and intern.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { daemonRequest, startInternFixture, type InternFixture } from '../../test/helpers/interns.ts';
import { getInternById, secretBinding } from '../gateway/interns/interns.ts';
import { daemonPaths } from '../shared/daemon-protocol.ts';
import { noSandbox } from '../../test/helpers/sandbox.ts';

const CHAT = fileURLToPath(new URL('./chat.ts', import.meta.url));

function runCli(
  args: string[],
  input: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(CHAT)}); process.exitCode = await m.runChat(process.argv.slice(1));`,
      ...args,
    ],
    {
      env: { ...process.env, NO_COLOR: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

describe('cohort chat', () => {
  let f: InternFixture;
  let id: string;
  before(async () => {
    f = await startInternFixture();
    id = await f.intern('cli');
  });
  after(() => f.close());

  test('streams text and dimmed reasoning, answers a question and a permission, keeps the session, prints errors in words', {
    skip: noSandbox,
  }, async () => {
    const input = [
      '/think mulling\\',
      '/say hello there',
      '/ask What is your name?',
      'Ada',
      ':mode manual',
      '/shell echo cli-ok',
      '1',
      '/fail 400',
      '',
    ].join('\n');
    const { code, out } = await runCli([id], input, {
      COHORT_BASE_URL: f.gw.url,
      COHORT_API_KEY: f.gw.keys.api_key,
      NO_COLOR: '',
    });
    assert.equal(code, 0, out);
    assert.ok(out.includes('\x1b[2mmulling\x1b[22m'), out);
    assert.match(out, /hello there/);
    assert.match(out, /The intern asks: What is your name\?/);
    assert.match(out, /answer \(string, required\)> /);
    assert.match(out, /Ada/);
    assert.match(
      out,
      /The intern asks permission to use shell:\n {2}command: echo cli-ok\n {2}runs inside the intern's sandbox \(no network, writes only in its work directory\)\n/,
    );
    assert.match(out, /1\) allow once/);
    assert.match(out, /cli-ok/);
    assert.match(out, /error: the intern could not run the turn: .* \(502 turn_failed\)/);
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    const secret = f.gw.ctx.sealer.open(row.sealedSecret!, secretBinding.daemon(id));
    const status = await daemonRequest(row.hostname!, daemonPaths.status, {
      headers: { authorization: `Bearer ${secret}` },
    });
    assert.equal((JSON.parse(status.text) as { sessions: number }).sessions, 1, 'one session across every prompt');
  });

  test("beside the gateway's data dir it needs no key: bootstrap.json's api_key is used", async () => {
    const { code, out } = await runCli([id], '/say from the data dir\n', {
      COHORT_BASE_URL: f.gw.url,
      COHORT_API_KEY: '',
      COHORT_DATA_DIR: f.gw.dataDir,
    });
    assert.equal(code, 0, out);
    assert.match(out, /from the data dir/);
  });

  test('refusals and usage problems in words', async () => {
    const unknown = await runCli(
      ['5b0e2f9c-1111-4111-8111-111111111111', '--base-url', f.gw.url, '--key', f.gw.keys.api_key],
      'hi\n',
      {},
    );
    assert.match(unknown.out, /error: no such intern: resource not found: intern \(404 not_found\)/);
    const badKey = await runCli([id, '--base-url', f.gw.url, '--key', 'ck-wrong'], 'hi\n', {});
    assert.match(badKey.out, /error: the API key was not accepted \(401\)/);
    const empty = mkdtempSync(join(tmpdir(), 'cohort-nokey-'));
    const noKey = await runCli([id], '', { COHORT_API_KEY: '', COHORT_DATA_DIR: empty });
    rmSync(empty, { recursive: true });
    assert.deepEqual(
      [noKey.code, noKey.out],
      [
        2,
        `error: no API key: pass --key, set COHORT_API_KEY, or run beside the gateway's data dir (${empty}: its bootstrap.json has one)\n`,
      ],
    );
    const badMode = await runCli([id, '--mode', 'bogus'], 'hi\n', { COHORT_API_KEY: 'ck-x' });
    assert.deepEqual([badMode.code, badMode.out], [2, 'error: --mode must be manual or self-drive, not "bogus"\n']);
    const typo = await runCli([id, '--base-url', f.gw.url, '--key', f.gw.keys.api_key], ':mode bogus\n:mode\n', {});
    assert.equal(typo.code, 0);
    assert.match(typo.out, /error: the mode is manual or self-drive, not "bogus" \(still self-drive\)\n/);
    assert.match(typo.out, /\(approval mode: self-drive\)/);
  });
});
