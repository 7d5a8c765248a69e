// Hibernation end to end (docs/fleet.md): real gateways, real daemons in their sandboxes, the
// built-in agent on the scripted model. Interns fall asleep after a short idle time; chats, tool
// replies, suspend, delete and provision work on them; a paused run keeps its intern awake; a
// full wake queue refuses with 503 busy; two gateways racing to wake one intern start one daemon.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertChatStream, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { startTestGateway, postgresUrl, type TestGateway } from './helpers/gateway.ts';
import { freePort } from './helpers/gateway-process.ts';
import { createTestAccount } from './helpers/accounts.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { getInternById } from '../src/gateway/interns/interns.ts';
import { text } from './helpers/chat.ts';
import { waitFor } from './helpers/wait.ts';

// The idle time is short for a quick suite, but long enough that a check right after a turn finds
// its intern still awake on a loaded machine; the deadline leaves a paused run idle well past it.
const IDLE_MS = 1000;
const ENV = {
  COHORT_INTERN_IDLE_MS: String(IDLE_MS),
  COHORT_INTERACTION_DEADLINE_MS: '4000',
  COHORT_INTERN_DISK_MB: '64',
};
const say = (content: string, session_id?: string) => ({
  stream: true,
  ...(session_id ? { session_id } : {}),
  messages: [{ role: 'user', content }],
});
const ASLEEP = { step_label: 'asleep: the next chat wakes it', step_number: 1, total_steps: 1 };

/** Waits (up to 30 s) until the intern's record shows it asleep; returns the record. */
function asleep(gw: TestGateway, id: string) {
  return waitFor(
    'the intern fell asleep',
    async () => {
      const got = await gw.call('GET', `/interns/${id}`);
      return got.body.progress?.step_label === ASLEEP.step_label ? got.body : null;
    },
    { timeoutMs: 30_000, everyMs: 50 },
  );
}

/** Processes whose command line names the intern's directory (its launcher, daemon and agent). */
function processesOf(dataDir: string, id: string): number {
  let n = 0;
  for (const p of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join(dataDir, 'interns', id))) n++;
    } catch {}
  }
  return n;
}

describe('hibernation', { skip: noSandbox }, () => {
  let f: InternFixture;
  before(async () => {
    f = await startInternFixture({ env: ENV });
  });
  after(() => f.close());

  test('an idle intern falls asleep (status running, no process left) and the next chat wakes it; its session survives', async () => {
    const id = await f.intern('sleeper');
    const first = await f.chat(id, say('remember cobalt', 'fleet-1'));
    assertChatStream(first);
    assert.equal(text(first), 'You said: remember cobalt');
    const record = await asleep(f.gw, id);
    assert.equal(record.status, 'running');
    assert.deepEqual(record.progress, ASLEEP);
    assert.equal(record.hostname, null);
    const row = await getInternById(f.gw.ctx.store.db, id);
    assert.deepEqual([row?.power, row?.daemonPid, row?.hostname], ['asleep', null, null]);
    assert.equal(processesOf(f.gw.dataDir, id), 0);

    const woken = await f.chat(id, say('what was it?', 'fleet-1'));
    assertChatStream(woken);
    assert.equal(text(woken), 'You said: what was it?');
    assert.equal(woken.chunks.at(-1).session_id, 'fleet-1');
    const awake = await f.gw.call('GET', `/interns/${id}`);
    assert.deepEqual([awake.body.status, awake.body.progress], ['running', null]);
    // The agent continued the conversation it kept on disk across the sleep: the model was sent
    // the earlier exchange too, six words ("remember cobalt", "You said: remember cobalt") more
    // than the same prompt in a new session.
    const fresh = await f.chat(id, say('what was it?', 'fleet-2'));
    assert.equal(woken.chunks.at(-1).usage.prompt_tokens - fresh.chunks.at(-1).usage.prompt_tokens, 6);
  });

  test('a paused run is never put to sleep; once its deadline ends it, the intern sleeps and a late reply wakes it and is told the run ended', async () => {
    const id = await f.intern('asker');
    const asked = await f.chat(id, say('/ask What is your name?'));
    assertChatStream(asked);
    const call = asked.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])[0];
    const sessionId = asked.chunks.at(-1).session_id as string;
    // Sweeps once it has waited for the answer longer than the idle time leave it awake. A fixed
    // wait: the idle time passing (on the daemon's own clock, in its process) is what is tested.
    await sleep(IDLE_MS * 1.5);
    await f.gw.ctx.fleet.sweep();
    await f.gw.ctx.fleet.sweep();
    const paused = await getInternById(f.gw.ctx.store.db, id);
    assert.equal(paused?.power, 'awake');
    await asleep(f.gw, id);
    const late = await f.chat(id, {
      stream: true,
      session_id: sessionId,
      messages: [
        { role: 'assistant', content: null, tool_calls: [call] },
        {
          role: 'tool',
          tool_call_id: call.id,
          content: JSON.stringify({ action: 'accept', content: { answer: 'Grace' } }),
        },
      ],
    });
    assert.equal(late.status, 409);
    assert.deepEqual(late.body, {
      error: {
        code: 409,
        message: 'the interaction is no longer waiting: its run has ended',
        metadata: { reason: 'interaction_not_pending', retryable: false },
      },
    });
    const row = await getInternById(f.gw.ctx.store.db, id);
    assert.equal(row?.power, 'awake');
  });

  test('suspend, provision and delete work on a sleeping intern', async () => {
    const id = await f.intern('napper');
    assertChatStream(await f.chat(id, say('hello')));
    await asleep(f.gw, id);
    const suspend = await f.gw.call('POST', `/interns/${id}/suspend`);
    assert.deepEqual([suspend.status, suspend.body], [200, { suspended: true }]);
    const suspended = await f.gw.call('GET', `/interns/${id}`);
    assert.deepEqual([suspended.body.status, suspended.body.progress], ['stopped', null]);
    const refused = await f.chat(id, say('hello'));
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.metadata.reason, 'intern_not_ready');

    assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
    await f.gw.ctx.interns.idle();
    const running = await f.gw.call('GET', `/interns/${id}`);
    assert.deepEqual([running.body.status, running.body.progress], ['running', null]);
    assertChatStream(await f.chat(id, say('back again')));

    await asleep(f.gw, id);
    assert.deepEqual((await f.gw.call('DELETE', `/interns/${id}`)).body, { deleting: true });
    await f.gw.ctx.interns.idle();
    assert.equal((await f.gw.call('GET', `/interns/${id}`)).status, 404);
    assert.equal(existsSync(join(f.gw.dataDir, 'interns', id)), false);
    assert.equal(processesOf(f.gw.dataDir, id), 0);
  });

  test("another account's key cannot wake an intern: 404, and it sleeps on", async () => {
    const id = await f.intern('private');
    assertChatStream(await f.chat(id, say('hello')));
    await asleep(f.gw, id);
    // Another organization (outside this one's programme) and another workspace of the same one.
    const stranger = await createTestAccount(f.gw.ctx.store.db, { name: 'stranger' });
    const r = await f.chat(id, say('wake up'), { key: stranger.apiKey });
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: { code: 404, message: 'resource not found' } });
    const neighbour = await createTestAccount(f.gw.ctx.store.db, { name: 'neighbour', orgId: f.gw.keys.org_id });
    const n = await f.chat(id, say('wake up'), { key: neighbour.apiKey });
    assert.equal(n.status, 404);
    assert.deepEqual(n.body, {
      error: { code: 404, message: 'resource not found: intern', metadata: { reason: 'not_found', retryable: false } },
    });
    assert.equal((await getInternById(f.gw.ctx.store.db, id))?.power, 'asleep');
  });
});

describe('hibernation over TCP addresses and a given model endpoint, as a cluster provisioner has them', () => {
  let f: InternFixture;
  before(async () => {
    // Daemons reached at an address (a pod's, in a cluster) whose agents reach the model through
    // the gateway's public URL (a Service's), not this host's sockets.
    const port = await freePort();
    f = await startInternFixture({
      env: {
        ...ENV,
        COHORT_UNSAFE_NO_ISOLATION: '1',
        PORT: String(port),
        COHORT_PUBLIC_URL: `http://127.0.0.1:${port}/api/v1`,
      },
    });
  });
  after(() => f.close());

  test('an intern sleeps, and wakes at a new address on the next chat', async () => {
    const id = await f.intern('remote');
    const first = await f.chat(id, say('hello', 'tcp-1'));
    assertChatStream(first);
    await asleep(f.gw, id);
    assert.equal(processesOf(f.gw.dataDir, id), 0);
    const woken = await f.chat(id, say('again', 'tcp-1'));
    assertChatStream(woken);
    assert.equal(text(woken), 'You said: again');
    const row = await getInternById(f.gw.ctx.store.db, id);
    assert.equal(row?.power, 'awake');
    assert.match(row?.hostname ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe('the wake queue', { skip: noSandbox }, () => {
  let f: InternFixture;
  before(async () => {
    f = await startInternFixture({
      env: { ...ENV, COHORT_WAKE_CONCURRENCY: '1', COHORT_WAKE_QUEUE: '1', COHORT_WAKE_QUEUE_PER_ACCOUNT: '1' },
    });
  });
  after(() => f.close());

  test('beyond the queue, a wake is refused 503 busy with Retry-After; the others stream', async () => {
    const ids = [await f.intern('q1'), await f.intern('q2'), await f.intern('q3')];
    for (const id of ids) assertChatStream(await f.chat(id, say('hello')));
    for (const id of ids) await asleep(f.gw, id);
    // One starts, one waits its turn, the third finds the queue full.
    const results = await Promise.all(ids.map((id) => f.chat(id, say('wake up'))));
    const byStatus = results.sort((a, b) => a.status - b.status);
    assert.deepEqual(
      byStatus.map((r) => r.status),
      [200, 200, 503],
    );
    for (const r of byStatus.slice(0, 2)) assertChatStream(r);
    const busy = byStatus[2]!;
    assert.deepEqual(busy.body, {
      error: {
        code: 503,
        message: 'too many interns are waking up on this machine; retry shortly',
        metadata: { reason: 'busy', retryable: true },
      },
    });
    assert.match(busy.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  });
});

describe('two gateways on one database', {
  skip: noSandbox || (postgresUrl ? false : 'DATABASE_URL is not set'),
}, () => {
  let g1: TestGateway;
  let g2: TestGateway;
  before(async () => {
    // One data dir (the interns' directories) and one PostgreSQL schema, as two gateways on one host.
    g1 = await startTestGateway({ postgres: true, env: ENV });
    g2 = await startTestGateway({ pgSchema: g1.pgSchema, keys: g1.keys, dataDir: g1.dataDir, env: ENV });
  });
  after(async () => {
    await g2.close();
    await g1.close();
  });

  test('racing to wake the same intern, they start one daemon between them', async () => {
    const created = await g1.call('POST', '/interns', { body: { name: 'contested', provision: true } });
    assert.equal(created.status, 201);
    const id = created.body.id as string;
    await g1.ctx.interns.idle();
    const chat = (gw: TestGateway, session: string) =>
      fetch(`${gw.url}/interns/${id}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.keys.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(say('hello', session)),
      }).then(async (r) => ({ status: r.status, text: await r.text() }));
    assert.equal((await chat(g1, 'warm')).status, 200);
    await asleep(g1, id);
    const log = join(g1.dataDir, 'interns', id, 'daemon.log');
    const starts = () => (readFileSync(log, 'utf8').match(/\{"listening":/g) ?? []).length;
    const before = starts();
    const [a, b] = await Promise.all([chat(g1, 'one'), chat(g2, 'two')]);
    // The turn lock is the intern's: the later turn may find the earlier still running.
    const statuses = [a.status, b.status].sort();
    assert.ok(
      JSON.stringify(statuses) === '[200,200]' || JSON.stringify(statuses) === '[200,409]',
      JSON.stringify([a, b]),
    );
    for (const r of [a, b]) if (r.status === 409) assert.equal(JSON.parse(r.text).error.metadata.reason, 'busy');
    assert.equal(starts(), before + 1);
    const row = await getInternById(g1.ctx.store.db, id);
    assert.equal(row?.power, 'awake');
    assert.equal(processesOf(g1.dataDir, id) > 0, true);
    assert.equal((await g1.call('DELETE', `/interns/${id}`)).status, 202);
    await g1.ctx.interns.idle();
  });
});
