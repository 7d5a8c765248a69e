// The gateway process stopping with streams open: in-flight work gets COHORT_SHUTDOWN_GRACE_MS,
// then every open stream (intern chat, model request in either API style) ends with an error chunk
// and its terminator, the process exits 0, and the intern's daemon keeps running. A second signal
// exits at once.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { freePort, gatewayProcesses, type GatewayProcess } from './helpers/gateway-process.ts';
import { daemonAnswers, parseSse, readUntil, rest, runningInternOn } from './helpers/interns.ts';
import { join } from 'node:path';
import { waitFor } from './helpers/wait.ts';

/** Whether nothing listens on a loopback port any more. */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

const stopping = {
  code: 502,
  message: 'the gateway is shutting down',
  metadata: { reason: 'stream_severed', retryable: true },
};

async function post(gw: GatewayProcess, path: string, body: unknown, key = gw.keys().api_key) {
  return fetch(gw.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('gateway shutdown', () => {
  const pool = gatewayProcesses('cohort-shutdown-');
  after(() => pool.cleanup());
  const gateway = async (env: Record<string, string>) =>
    pool.start({ dataDir: pool.dataDir(), port: await freePort(), env });

  test('after the grace, open streams end with an error chunk, the final frames and [DONE]; the process exits 0 and the daemon stays', async () => {
    const gw = await gateway({ COHORT_SHUTDOWN_GRACE_MS: '300' });
    const intern = await runningInternOn(gw, 'through-shutdown');
    const id = intern.id as string;
    const slow = '/say before\n/sleep 30000\n/say never';
    const chat = await post(gw, `/interns/${id}/chat/completions`, {
      stream: true,
      messages: [{ role: 'user', content: slow }],
    });
    const model = await post(gw, '/chat/completions', {
      model: 'local/scripted',
      stream: true,
      messages: [{ role: 'user', content: slow }],
    });
    const anthropic = await post(gw, '/messages', {
      model: 'local/scripted',
      stream: true,
      max_tokens: 100,
      messages: [{ role: 'user', content: slow }],
    });
    const opened = [
      await readUntil(chat, 'before'),
      await readUntil(model, 'before'),
      await readUntil(anthropic, 'before'),
    ];
    const exited = once(gw.child, 'exit');
    gw.child.kill('SIGTERM');
    const [chatText, modelText, anthropicText] = await Promise.all(opened.map((o) => rest(o.reader, o.seen)));

    const c = parseSse(chatText!);
    const err = c.chunks.find((x) => x.choices[0]?.finish_reason === 'error');
    assert.deepEqual(err.error, stopping);
    assert.deepEqual([err.model, c.chunks.at(-1).choices, c.chunks.at(-1).usage], ['service/intern', [], null]);
    assert.equal(typeof c.chunks.at(-1).session_id, 'string');
    assert.equal(c.done, true);
    assert.ok(!chatText!.includes('never'));

    const m = parseSse(modelText!);
    assert.deepEqual(m.chunks.at(-1).error, stopping);
    assert.equal(m.chunks.at(-1).choices[0].finish_reason, 'error');
    assert.equal(m.done, true);

    assert.match(
      anthropicText!,
      /event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"the gateway is shutting down"\}\}\n\n$/,
    );

    const [code] = await exited;
    assert.equal(code, 0);
    assert.equal(
      await daemonAnswers(`unix:${join(gw.dataDir, 'run', 'i', id, 'd.sock')}`),
      true,
      'the daemon outlives the gateway',
    );
  });

  // Without the close, the connection would stay until Fastify's keep-alive timeout (72 s). What is
  // bounded is the time from the signal to the close, not the test: starting a gateway from source
  // under a loaded machine can take most of 30 s by itself.
  test('a keep-alive connection whose stream the shutdown ended is closed by the gateway, not left to hold the exit', async () => {
    const gw = await gateway({ COHORT_SHUTDOWN_GRACE_MS: '200' });
    const body = JSON.stringify({
      model: 'local/scripted',
      stream: true,
      messages: [{ role: 'user', content: '/say before\n/sleep 60000' }],
    });
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.write(
      `POST /api/v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: keep-alive\r\nauthorization: Bearer ${gw.keys().api_key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString()));
    await waitFor('the stream began', () => {
      assert.ok(!socket.destroyed, `the connection closed before the stream began: ${got}`);
      return got.includes('before');
    });
    const closed = once(socket, 'close');
    const exited = once(gw.child, 'exit');
    const signalled = performance.now();
    gw.child.kill('SIGTERM');
    await closed;
    const ms = performance.now() - signalled;
    assert.ok(ms < 30_000, `closed ${Math.round(ms)} ms after the signal: well before the 72 s keep-alive timeout`);
    assert.match(got, /data: \[DONE\]\n\n\r\n0\r\n\r\n$/);
    assert.ok(got.includes('"message":"the gateway is shutting down"'));
    assert.deepEqual(await exited, [0, null]);
  });

  test('a second signal exits at once, without waiting for open streams', async () => {
    const gw = await gateway({ COHORT_SHUTDOWN_GRACE_MS: '600000' });
    const model = await post(gw, '/chat/completions', {
      model: 'local/scripted',
      stream: true,
      messages: [{ role: 'user', content: '/say before\n/sleep 60000' }],
    });
    const { reader, seen } = await readUntil(model, 'before');
    const exited = once(gw.child, 'exit');
    gw.child.kill('SIGTERM');
    // The first signal is under way once the gateway stops listening; it still waits for the stream.
    const port = Number(new URL(gw.url).port);
    await waitFor('the gateway stops accepting connections', () => refused(port));
    assert.equal(gw.child.exitCode, null, 'the first signal waits for the open stream');
    gw.child.kill('SIGINT');
    const [code] = await exited;
    assert.equal(code, 1);
    assert.equal(parseSse(await rest(reader, seen).catch(() => '')).done, false);
  });
});
