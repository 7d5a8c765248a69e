// The README's snippets, run as written against a real gateway and a real intern, so the README
// cannot drift from what works: each fenced block marked `readme-test=NAME` is extracted, its
// address replaced by the test gateway's, and executed (the walkthrough with bash and curl, the
// JavaScript clients with node from this project's dev dependencies). Python's `openai` package
// is not installable here (no Debian package, no PyPI access): unless it is importable, the
// request that snippet makes is sent as openai-python sends it, built from the snippet's own
// arguments (model, messages, extra_body), and its printed text is checked.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './helpers/cli.ts';
import { parseSse, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';

const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const snippets = new Map(
  [...README.matchAll(/```(\w+) readme-test=([\w-]+)\n([\s\S]*?)```/g)].map((m) => [
    m[2]!,
    { lang: m[1]!, code: m[3]! },
  ]),
);
const ADDRESS = 'http://127.0.0.1:8080/api/v1';
// Under node_modules, so the snippets' imports resolve to this project's packages.
const SCRATCH = join(REPO, 'node_modules', '.cache', 'cohort-readme');

function snippet(name: string): { lang: string; code: string } {
  const s = snippets.get(name);
  assert.ok(s, `README has a block marked readme-test=${name}`);
  return s;
}

test("the README stays a newcomer's page: at most about 8 KB, every snippet marked", () => {
  assert.ok(Buffer.byteLength(README) <= 8_500, `README is ${Buffer.byteLength(README)} bytes`);
  assert.deepEqual([...snippets.keys()], ['walkthrough', 'openai', 'ai-sdk', 'langchain', 'openrouter', 'python']);
  assert.ok(!/\bsession \d/i.test(README));
});

describe('README snippets against a real gateway', { skip: noSandbox }, () => {
  let f: InternFixture;
  let internId: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    f = await startInternFixture();
    internId = await f.intern('readme');
    env = { ...process.env, COHORT_API_KEY: f.gw.keys.api_key, INTERN_ID: internId, NO_COLOR: '1' };
    mkdirSync(SCRATCH, { recursive: true });
  });
  after(() => f.close());

  // Asynchronous: the gateway answering the snippet runs in this process.
  const run = (cmd: string, args: string[], cwd = REPO) =>
    new Promise<string>((resolve, reject) => {
      execFile(cmd, args, { cwd, env, encoding: 'utf8', timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${cmd} failed: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
      );
    });
  const node = (name: string) => {
    const file = join(SCRATCH, `${name}.mjs`);
    writeFileSync(file, snippet(name).code.replaceAll(ADDRESS, f.gw.url));
    return run(process.execPath, [file]);
  };

  test('the walkthrough: a model request, an intern, a turn, a question and its answer, a permission and its approval', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'cohort-readme-'));
    try {
      symlinkSync(f.gw.dataDir, join(cwd, 'data'));
      const out = await run(
        '/bin/bash',
        ['-eo', 'pipefail', '-c', snippet('walkthrough').code.replaceAll(ADDRESS, f.gw.url)],
        cwd,
      );
      const [completion, ...streams] = out.split(/(?=data: \{"id")/);
      assert.equal(JSON.parse(completion!).choices[0].message.content, 'hello');
      const text = (sse: string) =>
        parseSse(sse)
          .chunks.map((c) => c.choices[0]?.delta.content ?? '')
          .join('');
      const finishes = (sse: string) =>
        parseSse(sse)
          .chunks.flatMap((c) => c.choices.map((x: { finish_reason: string | null }) => x.finish_reason))
          .filter(Boolean);
      const bodies = out
        .slice(completion!.length)
        .split('data: [DONE]\n\n')
        .filter((b) => b.trim());
      assert.equal(streams.length > 0, true);
      assert.deepEqual(
        bodies.map((b) => [text(b), finishes(b)]),
        [
          ['hi, I am Ada', ['stop']],
          ['ask_user: {"answer":"Grace"}', ['stop']],
          ['shell: approved\n[exit 0]', ['stop']],
        ],
      );
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('openai (npm)', async () => assert.equal(await node('openai'), 'hello\nhi from openai\n'));
  test('Vercel AI SDK', async () => assert.equal(await node('ai-sdk'), 'hello\nhi from the AI SDK\n'));
  test('LangChain', async () => assert.equal(await node('langchain'), 'hello\nhi from LangChain\n'));
  test('@openrouter/sdk', async () => assert.equal(await node('openrouter'), 'hello\n'));

  test('Python openai: the request its snippet makes (extra_body in the body)', async () => {
    const code = snippet('python').code;
    if (spawnSync('python3', ['-c', 'import openai']).status === 0) {
      const file = join(SCRATCH, 'python.py');
      writeFileSync(file, code.replaceAll(ADDRESS, f.gw.url));
      assert.equal(await run('python3', [file]), 'hi from Python\n');
      return;
    }
    // What openai-python sends for chat.completions.create(model=…, stream=True, messages=…, extra_body=…):
    // POST {base_url}/chat/completions, a JSON body of the named arguments with extra_body's keys merged in.
    const arg = (name: string) => JSON.parse(new RegExp(`${name}=(\\[.*?\\]|\\{.*?\\}|"[^"]*")[,)]`).exec(code)![1]!);
    assert.match(code, /base_url=f"http:\/\/127\.0\.0\.1:8080\/api\/v1\/interns\/\{os\.environ\['INTERN_ID'\]\}"/);
    assert.match(code, /stream=True/);
    const body = { messages: arg('messages'), model: arg('model'), stream: true, ...arg('extra_body') };
    assert.deepEqual(body, {
      messages: [{ role: 'user', content: '/say hi from Python' }],
      model: 'intern',
      stream: true,
      session_id: 'python-1',
      approval_mode: 'self-drive',
    });
    const res = await fetch(`${f.gw.url}/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${f.gw.keys.api_key}`,
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': 'OpenAI/Python 1.0.0',
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    const chunks = parseSse(await res.text()).chunks;
    // print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
    assert.equal(
      chunks
        .filter((c) => c.choices.length)
        .map((c) => c.choices[0].delta.content ?? '')
        .join(''),
      'hi from Python',
    );
    assert.equal(chunks.at(-1).session_id, 'python-1');
  });
});
