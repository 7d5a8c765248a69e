// The built-in agent as an ACP client sees it: a real child process over stdio, on the scripted model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentProcess, toAgentCallError, type SessionNotification } from '../acp/index.ts';
import { startScriptedServer, type ScriptedServer } from '../../../test/helpers/scripted-server.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

let model: ScriptedServer;
let root: string;
let work: string;
const updates: SessionNotification[] = [];
let permissions = 0;

before(async () => {
  model = await startScriptedServer();
  root = mkdtempSync(join(tmpdir(), 'cohort-agent-'));
  work = join(root, 'work');
  mkdirSync(work);
});
after(async () => {
  await model.close();
  rmSync(root, { recursive: true, force: true });
});

function start(extra: Record<string, string> = {}): Promise<AgentProcess> {
  return AgentProcess.start({
    command: process.execPath,
    args: ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('./main.ts', import.meta.url))],
    cwd: work,
    env: {
      PATH: process.env.PATH,
      COHORT_AGENT_BASE_URL: model.url,
      COHORT_AGENT_API_KEY: 'k',
      COHORT_AGENT_MODEL: 'local/scripted',
      COHORT_AGENT_STATE_DIR: join(root, 'state'),
      COHORT_AGENT_INSTRUCTIONS: 'You are a careful intern.',
      LOG_LEVEL: 'warn',
      ...extra,
    },
    handlers: {
      onUpdate: (n) => void updates.push(n),
      onPermission: async () => {
        permissions++;
        return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
      },
      onElicitation: async () => ({ action: 'decline' }),
    },
  });
}

/** The agent's text for one prompt, chunks joined. */
async function said(a: AgentProcess, sessionId: string, prompt: string): Promise<string> {
  updates.length = 0;
  assert.equal(await a.prompt(sessionId, prompt), 'end_turn');
  return updates
    .map((n) =>
      n.update.sessionUpdate === 'agent_message_chunk' && n.update.content.type === 'text' ? n.update.content.text : '',
    )
    .join('');
}

test('files: read and write inside the work dir; paths and symlinks leading out are refused', async () => {
  const a = await start();
  try {
    const s = await a.newSession(work);
    assert.equal(
      await said(a, s, '/tool write_file {"path": "notes/a.txt", "content": "hi there"}'),
      'write_file: wrote 8 bytes to notes/a.txt',
    );
    assert.equal(await said(a, s, '/tool read_file {"path": "notes/a.txt"}'), 'read_file: hi there');
    assert.equal(
      await said(a, s, '/tool read_file {"path": "../../etc/passwd"}'),
      'read_file: Error: ../../etc/passwd is outside the work directory',
    );
    symlinkSync('/etc', join(work, 'etc-link'));
    assert.equal(
      await said(a, s, '/tool read_file {"path": "etc-link/hostname"}'),
      'read_file: Error: etc-link/hostname is outside the work directory',
    );
    assert.equal(
      await said(a, s, '/tool write_file {"path": "etc-link/x", "content": "no"}'),
      'write_file: Error: etc-link/x is outside the work directory',
    );
  } finally {
    await a.stop();
  }
});

test("instructions are the system prompt; the shell sees none of the agent's COHORT_ settings", async () => {
  const a = await start();
  try {
    const s = await a.newSession(work);
    assert.equal(await said(a, s, '/shell env | grep -c COHORT_ || true'), 'shell: 0\n[exit 0]');
    const body = model.requests.at(-1) as {
      messages: { role: string; content: string }[];
      tools: { function: { name: string } }[];
    };
    assert.deepEqual(body.messages[0], { role: 'system', content: 'You are a careful intern.' });
    assert.deepEqual(
      body.tools.map((t) => t.function.name),
      ['shell', 'read_file', 'write_file', 'ask_user'],
    );
  } finally {
    await a.stop();
  }
});

test('a command past the time limit is killed with everything it started, and the model is told', async () => {
  const a = await start({ COHORT_AGENT_COMMAND_TIMEOUT_MS: '300' });
  try {
    const s = await a.newSession(work);
    const text = await said(a, s, '/shell echo started; (sleep 30 &) ; sleep 30');
    assert.equal(text, 'shell: started\n[killed after 0.3 s, the time limit for a command]');
  } finally {
    await a.stop();
  }
});

test('manual mode where bubblewrap cannot run: shell calls are refused, never run unsandboxed', async () => {
  const a = await start({ COHORT_AGENT_BWRAP: '/nonexistent/bwrap' });
  try {
    const s = await a.newSession(work);
    await a.setMode(s, 'manual');
    permissions = 0;
    const text = await said(a, s, '/shell touch should-not-exist');
    assert.match(text, /^shell: Refused: manual mode runs shell commands only inside the bubblewrap sandbox/);
    assert.equal(permissions, 0);
  } finally {
    await a.stop();
  }
});

test('steering needs a running turn; unknown modes are refused', async () => {
  const a = await start();
  try {
    const s = await a.newSession(work);
    await assert.rejects(a.steer(s, 'hello'), (e) => toAgentCallError(e).message.includes('no turn is running'));
    await assert.rejects(a.setMode(s, 'yolo'));
  } finally {
    await a.stop();
  }
});

test('conversations persist: a new agent process loads the session and replays it', async () => {
  const a = await start();
  const s = await a.newSession(work);
  await said(a, s, 'first message');
  await a.stop();
  const b = await start();
  try {
    updates.length = 0;
    await b.loadSession(s, work);
    assert.deepEqual(
      updates.map((n) => [
        n.update.sessionUpdate,
        n.update.sessionUpdate.endsWith('_chunk') ? (n.update as { content: { text: string } }).content.text : '',
      ]),
      [
        ['user_message_chunk', 'first message'],
        ['agent_message_chunk', 'You said: first message'],
      ],
    );
    await said(b, s, 'second');
    const body = model.requests.at(-1) as { messages: { content: string }[] };
    assert.deepEqual(
      body.messages.map((m) => m.content),
      ['You are a careful intern.', 'first message', 'You said: first message', 'second'],
    );
  } finally {
    await b.stop();
  }
});

test('cancel mid-stream ends the turn cancelled and leaves no trace of it in the conversation', async () => {
  const a = await start();
  try {
    const s = await a.newSession(work);
    updates.length = 0;
    const turn = a.prompt(s, '/say going\n/sleep 60000');
    await waitFor('the first words streamed', () =>
      updates.some((n) => n.update.sessionUpdate === 'agent_message_chunk'),
    );
    await a.cancel(s);
    assert.equal(await turn, 'cancelled');
    await said(a, s, 'after');
    const body = model.requests.at(-1) as { messages: { content: string }[] };
    assert.deepEqual(
      body.messages.map((m) => m.content),
      ['You are a careful intern.', 'after'],
    );
  } finally {
    await a.stop();
  }
});
