// Faults across gateway processes (docs/internals/architecture.md#principles, 1): a gateway killed and
// restarted while a run is paused, one restarted on another port, a second gateway on the same PostgreSQL
// serving the reply, and re-adoption.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort, gatewayProcesses, killDaemonsUnder, type GatewayProcess } from './helpers/gateway-process.ts';
import { callProcess, runningInternOn } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { text } from './helpers/chat.ts';

const postgresUrl = process.env.DATABASE_URL;
const answer = (a: string) => JSON.stringify({ action: 'accept', content: { answer: a } });

async function pausedTurn(gw: GatewayProcess, id: string) {
  const r = await callProcess(
    gw,
    'POST',
    `/interns/${id}/chat/completions`,
    { stream: true, messages: [{ role: 'user', content: '/ask What is your name?' }] },
    gw.keys().api_key,
  );
  assert.equal(r.status, 200);
  const toolCall = r.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])[0];
  return { sessionId: r.chunks.at(-1).session_id as string, callId: toolCall.id as string };
}

const reply = (gw: GatewayProcess, id: string, p: { sessionId: string; callId: string }, a: string) =>
  callProcess(
    gw,
    'POST',
    `/interns/${id}/chat/completions`,
    { stream: true, session_id: p.sessionId, messages: [{ role: 'tool', tool_call_id: p.callId, content: answer(a) }] },
    gw.keys().api_key,
  );

describe('intern runs survive gateway processes', () => {
  const pool = gatewayProcesses('cohort-faults-');
  after(() => pool.cleanup());

  test('a gateway killed and restarted while a run is paused: the reply continues the run; dead daemons are marked failed', async () => {
    const dataDir = pool.dataDir();
    const port = await freePort();
    const g1 = await pool.start({ dataDir, port });
    const id = (await runningInternOn(g1, 'survivor')).id as string;
    const doomed = (await runningInternOn(g1, 'doomed')).id as string;
    const paused = await pausedTurn(g1, id);
    await g1.kill('SIGKILL');
    killDaemonsUnder(dataDir, doomed);
    const g2 = await pool.start({ dataDir, port });
    const cont = await reply(g2, id, paused, 'Grace');
    assert.equal(cont.status, 200);
    assert.match(text(cont), /Grace/);
    assert.deepEqual(cont.chunks.at(-1).choices, []);
    assert.equal(cont.chunks.at(-1).session_id, paused.sessionId);
    assert.equal((await callProcess(g2, 'GET', `/interns/${id}`)).body.status, 'running');
    const lost = (await callProcess(g2, 'GET', `/interns/${doomed}`)).body;
    assert.equal(lost.status, 'failed');
    assert.match(lost.last_failure_message, /daemon/);
    assert.equal((await callProcess(g2, 'DELETE', `/interns/${id}`)).status, 202);
  });

  // Agents reach the gateway through its sockets in the data dir, not the address it listened on.
  for (const mode of [
    { name: 'isolated', env: {} as Record<string, string>, skip: noSandbox },
    { name: 'unisolated', env: { COHORT_UNSAFE_NO_ISOLATION: '1' }, skip: false as const },
  ]) {
    test(`a gateway restarted on another PORT: the paused run's reply and a new turn reach the model (${mode.name})`, {
      skip: mode.skip,
    }, async () => {
      const dataDir = pool.dataDir();
      const g1 = await pool.start({ dataDir, port: await freePort(), env: mode.env });
      const id = (await runningInternOn(g1, 'follower')).id as string;
      const paused = await pausedTurn(g1, id);
      await g1.kill('SIGTERM');
      const g2 = await pool.start({ dataDir, port: await freePort(), env: mode.env });
      const cont = await reply(g2, id, paused, 'Hopper');
      assert.equal(cont.status, 200);
      assert.equal(text(cont), 'ask_user: {"answer":"Hopper"}');
      assert.equal(cont.chunks.at(-2).choices[0].finish_reason, 'stop');
      const next = await callProcess(
        g2,
        'POST',
        `/interns/${id}/chat/completions`,
        { stream: true, session_id: paused.sessionId, messages: [{ role: 'user', content: '/say still here' }] },
        g2.keys().api_key,
      );
      assert.deepEqual(
        [next.status, text(next), next.chunks.at(-2).choices[0].finish_reason],
        [200, 'still here', 'stop'],
      );
      assert.equal((await callProcess(g2, 'DELETE', `/interns/${id}`)).status, 202);
    });
  }

  test('a second gateway process on the same PostgreSQL serves the reply', {
    skip: postgresUrl ? false : 'DATABASE_URL is not set',
  }, async () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const dataDir = pool.dataDir();
    const [p1, p2] = [await freePort(), await freePort()];
    const env = { DATABASE_URL: postgresUrl!, COHORT_PG_SCHEMA: schema };
    try {
      const g1 = await pool.start({ dataDir, port: p1, env });
      const g2 = await pool.start({ dataDir, port: p2, env });
      const id = (await runningInternOn(g1, 'shared')).id as string;
      const paused = await pausedTurn(g1, id);
      const cont = await reply(g2, id, paused, 'Linus');
      assert.equal(cont.status, 200);
      assert.match(text(cont), /Linus/);
      await callProcess(g2, 'POST', `/interns/${id}/suspend`);
      await g1.kill('SIGTERM');
      await g2.kill('SIGTERM');
    } finally {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
  });
});
