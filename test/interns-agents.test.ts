// Interns running a catalogue agent other than the built-in one, end to end through the public API:
// Claude Code (@zed-industries/claude-code-acp) in the intern's isolated runtime, its model
// requests served by the gateway's /messages with the scripted model. Claude Code takes a prompt
// starting with "/" as its own command, so scripts start with a line of text.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { assertChatStream, startInternFixture, type ChatResult, type InternFixture } from './helpers/interns.ts';
import { getInternById, openSecrets } from '../src/gateway/interns/interns.ts';
import { inferenceRequests } from '../src/gateway/store/schema-inference.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { user, tool, text, callOf, finish } from './helpers/chat.ts';

const bash = (command: string) => `Please run it.\n/tool Bash ${JSON.stringify({ command, description: 'a step' })}`;
const installed = (specifier: string) => {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
};
const codexInstalled = installed(`@zed-industries/codex-acp-${process.platform}-${process.arch}/package.json`);
const claudeInstalled = installed('@zed-industries/claude-code-acp/dist/index.js');
const OFFERED = ['cohort', ...(claudeInstalled ? ['claude-code'] : []), ...(codexInstalled ? ['codex'] : [])];
const NOT_INSTALLED = [
  ...(claudeInstalled ? [] : [{ id: 'claude-code', name: 'Claude Code', install: 'npm run install:agents' }]),
  ...(codexInstalled ? [] : [{ id: 'codex', name: 'Codex', install: 'npm run install:agents' }]),
];
const optional = (yes: boolean) => (yes ? false : 'an optional install (npm run install:agents); CI installs it');

/** Stops the intern's daemon and agent, and starts them again on its disk. */
async function restart(f: InternFixture, id: string) {
  assert.deepEqual((await f.gw.call('POST', `/interns/${id}/suspend`)).body, { suspended: true });
  assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
  await f.gw.ctx.interns.idle();
  assert.equal((await f.gw.call('GET', `/interns/${id}`)).body.status, 'running');
}

describe('the agent catalogue', () => {
  let f: InternFixture;
  before(async () => {
    f = await startInternFixture();
  });
  after(() => f.close());

  test('GET /agents lists what interns may run, without commands or environments', async () => {
    const res = await f.gw.call('GET', '/agents', { key: f.gw.keys.api_key });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.data.map((a: { id: string }) => a.id),
      OFFERED,
    );
    assert.deepEqual(res.body.not_installed, NOT_INSTALLED);
    if (claudeInstalled)
      assert.deepEqual(res.body.data[1].supports, { sessions: true, questions: false, steering: false });
    assert.deepEqual(Object.keys(res.body.data[0]).sort(), ['description', 'id', 'name', 'supports']);
    assert.equal((await f.gw.call('GET', '/agents', { key: null })).status, 401);
  });

  test('an unknown agent is 400 naming the field and the choices, and nothing is created', async () => {
    const res = await f.gw.call('POST', '/interns', { body: { name: 'nobody', agent: 'gpt-engineer' } });
    assert.deepEqual(res.body, {
      error: {
        code: 400,
        message: `invalid request parameters: agent: unknown agent "gpt-engineer"; this installation offers ${OFFERED.join(', ')}`,
        metadata: { reason: 'bad_request', retryable: false },
      },
    });
    assert.equal((await f.gw.call('GET', '/interns')).body.data.length, 0);
    const made = await f.gw.call('POST', '/interns', { body: { name: 'default-agent' } });
    assert.equal(made.body.agent, 'cohort');
    const other = OFFERED[OFFERED.length - 1];
    const patched = await f.gw.call('PATCH', `/interns/${made.body.id}`, { body: { agent: other } });
    assert.equal(patched.body.agent, other);
    assert.equal((await f.gw.call('PATCH', `/interns/${made.body.id}`, { body: { agent: '' } })).status, 400);
  });

  test('a built-in agent that is not installed is 400 saying how the operator installs it', async (t) => {
    const absent = NOT_INSTALLED[0];
    if (!absent) return t.skip('both optional agents are installed here (CI installs them)');
    const res = await f.gw.call('POST', '/interns', { body: { name: 'absent', agent: absent.id } });
    assert.equal(res.status, 400);
    assert.equal(
      res.body.error.message,
      `invalid request parameters: agent: "${absent.id}" (${absent.name}) is not installed on this installation; its operator adds it with \`npm run install:agents\``,
    );
  });
});

describe('Claude Code as an intern', { skip: noSandbox || optional(claudeInstalled) }, () => {
  let f: InternFixture;
  let id: string;
  let key: string;
  before(async () => {
    f = await startInternFixture();
    id = await f.intern('claude', { agent: 'claude-code' });
    key = openSecrets(f.gw.ctx.sealer, (await getInternById(f.gw.ctx.store.db, id))!).apiKey;
  });
  after(() => f.close());

  const log = async () => {
    await f.gw.ctx.inference.flush();
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    return f.gw.ctx.store.db
      .select()
      .from(inferenceRequests)
      .where(eq(inferenceRequests.apiKeyId, row.apiKeyId!))
      .orderBy(inferenceRequests.createdAt);
  };

  test('a plain turn streams text; its model requests are in the log under the intern key and model', async () => {
    const r = await f.chat(id, user('Hello.\n/say hello from claude code', { session_id: 'first' }));
    assert.equal(r.status, 200);
    assert.equal(text(r), 'Hello.\nhello from claude code');
    assert.deepEqual(finish(r), ['stop']);
    assert.equal(r.chunks.at(-1).session_id, 'first');
    const rows = await log();
    assert.ok(rows.length >= 1);
    for (const row of rows)
      assert.deepEqual([row.apiStyle, row.model, row.status], ['messages', 'local/scripted', 200]);
  });

  test('a message starting with "/" that Claude Code takes as its own command: an error chunk saying so, then the final chunk; the next turn carries none of its caveat', async () => {
    const r = await f.chat(id, user('/foo bar', { session_id: 'slash' }));
    assertChatStream(r);
    const [, failed, final] = r.chunks;
    assert.equal(r.chunks.length, 3);
    const offered = '/debug, /compact, /context, /init, /pr-comments, /review, /security-review, /insights';
    assert.deepEqual(failed.choices, [{ index: 0, delta: {}, finish_reason: 'error' }]);
    assert.deepEqual(failed.error, {
      code: 502,
      message: `the message began with "/", so the agent took it as a command of its own, /foo, which it does not have (it offers ${offered}); nothing reached the model: to send the message to the model instead, begin it with a space`,
      metadata: { reason: 'turn_failed', retryable: false },
    });
    assert.deepEqual([final.choices, final.session_id, final.usage], [[], 'slash', null]);
    // Claude Code keeps the command in the session behind a caveat of its own; the scripted model says
    // the whole of its next user message back, caveat included, and what it marks is taken out.
    const next = await f.chat(id, user('Hello.\n/say after', { session_id: 'slash' }));
    assert.deepEqual(finish(next), ['stop']);
    assert.equal(text(next), 'Unknown skill: fooHello.\nafter');
    // Begun with a space, the same words reach the model.
    assert.equal(text(await f.chat(id, user(' /say to the model', { session_id: 'slash' }))), 'to the model');
  });

  test('manual mode: Bash arrives as a permission request naming the command; allow_once runs it and the output comes back', async () => {
    const cmd = 'mkdir -p made && echo made-it';
    const asked = await f.chat(id, user(bash(cmd), { session_id: 'manual', approval_mode: 'manual' }));
    assert.deepEqual(finish(asked), ['tool_calls']);
    const call = callOf(asked);
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual([args.kind, args.input], ['permission', { command: cmd, description: 'a step' }]);
    assert.ok(args.options.includes('allow_once') && args.options.includes('reject_once'), args.options);
    const done = await f.chat(id, tool('manual', call.id, 'allow_once'));
    assert.equal(text(done), 'Bash: made-it');
    assert.deepEqual(finish(done), ['stop']);
  });

  test('reject_once: the command does not run', async () => {
    const asked = await f.chat(
      id,
      user(bash('touch rejected-file && echo ran'), { session_id: 'rejecting', approval_mode: 'manual' }),
    );
    const done = await f.chat(id, tool('rejecting', callOf(asked).id, 'reject_once'));
    assert.equal(done.status, 200);
    assert.doesNotMatch(text(done), /ran/);
    const check = await f.chat(id, user(bash('ls; echo listed'), { session_id: 'checking' }));
    // Claude Code joins its messages without a line break; the work dir holds only what was allowed.
    assert.equal(text(check), 'Please run it.Bash: made\nlisted');
  });

  test('a second turn in a session carries the first (the agent keeps its sessions)', async () => {
    await f.chat(id, user('Remember this.\n/say noted', { session_id: 'memory' }));
    const before_ = (await log()).length;
    await f.chat(id, user('Again.\n/say second', { session_id: 'memory' }));
    await f.chat(id, user('Again.\n/say second', { session_id: 'elsewhere' }));
    const [same, other] = (await log())
      .slice(before_)
      .filter((r) => r.streamed)
      .slice(-2);
    assert.ok(
      same!.promptTokens! > other!.promptTokens!,
      `the session's earlier turn is in its request (${same!.promptTokens} > ${other!.promptTokens})`,
    );
  });

  test('sessions survive a daemon restart: suspended and provisioned again, the session goes on where it was', async () => {
    await restart(f, id);
    const before_ = (await log()).length;
    assert.equal(
      text(await f.chat(id, user('Again.\n/say after restart', { session_id: 'memory' }))),
      'Again.\nafter restart',
    );
    await f.chat(id, user('Again.\n/say after restart', { session_id: 'fresh-after-restart' }));
    const [same, other] = (await log())
      .slice(before_)
      .filter((r) => r.streamed)
      .slice(-2);
    assert.ok(same!.promptTokens! > other!.promptTokens!, `${same!.promptTokens} > ${other!.promptTokens}`);
  });

  test("the intern's model governs: whatever model its key names, the intern's model serves it", async () => {
    const res = await f.gw.call('POST', '/messages', {
      key,
      body: {
        model: 'anthropic/claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: '/say governed' }],
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.content, [{ type: 'text', text: 'governed' }]);
    const last = (await log()).at(-1)!;
    assert.deepEqual([last.requestedModel, last.model], ['anthropic/claude-sonnet-4-5', 'local/scripted']);
  });
});

describe('Codex as an intern', {
  skip: noSandbox || optional(codexInstalled),
}, () => {
  let f: InternFixture;
  let id: string;
  before(async () => {
    f = await startInternFixture();
    id = await f.intern('codex', { agent: 'codex' });
  });
  after(() => f.close());

  const exec = (cmd: string, escalate = false) =>
    `/tool exec_command ${JSON.stringify({ cmd, ...(escalate ? { sandbox_permissions: 'require_escalated', justification: 'a step' } : {}) })}`;
  const output = (r: ChatResult) => /Output:\n([\s\S]*)$/.exec(text(r))?.[1];

  test('a plain turn streams text; its model requests go through /responses under the intern key, served with its model', async () => {
    const r = await f.chat(id, user('/say hello from codex', { session_id: 'first' }));
    assert.equal(text(r), 'hello from codex');
    assert.deepEqual(finish(r), ['stop']);
    await f.gw.ctx.inference.flush();
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    const logged = await f.gw.ctx.store.db
      .select()
      .from(inferenceRequests)
      .where(eq(inferenceRequests.apiKeyId, row.apiKeyId!));
    assert.deepEqual(
      logged.map((l) => [l.apiStyle, l.requestedModel, l.model, l.status]),
      [['responses', 'gpt-5.4-mini', 'local/scripted', 200]],
    );
  });

  test("self-drive runs a command in the intern's runtime", async () => {
    assert.equal(output(await f.chat(id, user(exec('mkdir -p made && echo ran-it')))), 'ran-it\n');
  });

  test("manual: a command runs in Codex's read-only sandbox; an escalation is a permission request naming it, allow_once runs it, reject_once does not", async () => {
    assert.match(
      output(await f.chat(id, user(exec('touch sandboxed-file'), { approval_mode: 'manual' }))) ?? '',
      /Read-only file system/,
    );
    const asked = await f.chat(
      id,
      user(exec('touch allowed-file && echo made', true), { session_id: 'manual', approval_mode: 'manual' }),
    );
    assert.deepEqual(finish(asked), ['tool_calls']);
    const args = JSON.parse(callOf(asked).function.arguments);
    assert.deepEqual(
      [args.kind, args.title, args.input.command],
      ['permission', 'touch allowed-file && echo made', ['/bin/sh', '-lc', 'touch allowed-file && echo made']],
    );
    assert.ok(args.options.includes('allow_once') && args.options.includes('reject_once'));
    assert.equal(output(await f.chat(id, tool('manual', callOf(asked).id, 'allow_once'))), 'made\n');
    const refused = await f.chat(
      id,
      user(exec('touch refused-file && echo no', true), { session_id: 'refusing', approval_mode: 'manual' }),
    );
    const after_ = await f.chat(id, tool('refusing', callOf(refused).id, 'reject_once'));
    assert.equal(after_.status, 200);
    assert.doesNotMatch(text(after_), /Output:\nno/);
    assert.equal(output(await f.chat(id, user(exec('ls')))), 'allowed-file\nmade\n');
  });

  test('a second turn in a session carries the first', async () => {
    await f.chat(id, user('/say noted', { session_id: 'memory' }));
    await f.gw.ctx.inference.flush();
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    const count = async () =>
      await f.gw.ctx.store.db
        .select()
        .from(inferenceRequests)
        .where(eq(inferenceRequests.apiKeyId, row.apiKeyId!))
        .orderBy(inferenceRequests.createdAt);
    const before_ = (await count()).length;
    await f.chat(id, user('/say second', { session_id: 'memory' }));
    await f.chat(id, user('/say second', { session_id: 'elsewhere' }));
    await f.gw.ctx.inference.flush();
    const [same, other] = (await count()).slice(before_);
    assert.ok(same!.promptTokens! > other!.promptTokens!, `${same!.promptTokens} > ${other!.promptTokens}`);
  });

  test('sessions survive a daemon restart', async () => {
    await restart(f, id);
    await f.gw.ctx.inference.flush();
    const row = (await getInternById(f.gw.ctx.store.db, id))!;
    const rows = async () =>
      f.gw.ctx.store.db
        .select()
        .from(inferenceRequests)
        .where(eq(inferenceRequests.apiKeyId, row.apiKeyId!))
        .orderBy(inferenceRequests.createdAt);
    const before_ = (await rows()).length;
    assert.equal(text(await f.chat(id, user('/say after restart', { session_id: 'memory' }))), 'after restart');
    await f.chat(id, user('/say after restart', { session_id: 'fresh-after-restart' }));
    await f.gw.ctx.inference.flush();
    const [same, other] = (await rows()).slice(before_);
    assert.ok(same!.promptTokens! > other!.promptTokens!, `${same!.promptTokens} > ${other!.promptTokens}`);
  });
});
