// The access log: one info line per finished response, with the request id, method, URL, status
// and duration, for refusals and for a stream (written when it ends); none below info. Fastify has
// no logger of its own (app.ts), so these lines and each request's req.log are all ours.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';

type Line = { level: number; msg: string; reqId?: string; method?: string; url?: string; status?: number; ms?: number };

async function gatewayLogging(level: string): Promise<{ gw: TestGateway; lines: Line[] }> {
  const lines: Line[] = [];
  const logTo = new Writable({ write: (chunk, _enc, cb) => (lines.push(JSON.parse(String(chunk)) as Line), cb()) });
  return { gw: await startTestGateway({ env: { LOG_LEVEL: level }, logTo }), lines };
}

test('at info: one line per response, refusals and a finished stream included, each with its request id', async () => {
  const { gw, lines } = await gatewayLogging('info');
  assert.equal((await gw.call('GET', '/workspaces', { headers: { 'x-request-id': 'req-list' } })).status, 200);
  assert.equal(
    (await gw.call('GET', '/workspaces', { key: null, headers: { 'x-request-id': 'req-nokey' } })).status,
    401,
  );
  const streamed = await gw.call('POST', '/chat/completions', {
    key: gw.keys.api_key,
    headers: { 'x-request-id': 'req-stream' },
    body: { model: 'local/scripted', stream: true, messages: [{ role: 'user', content: 'hello there' }] },
  });
  assert.equal(streamed.status, 200);
  assert.ok((streamed.body as string).endsWith('data: [DONE]\n\n'));
  await gw.close();

  const access = lines.filter((l) => l.msg === 'request');
  assert.deepEqual(
    access.map((l) => [l.level, l.reqId, l.method, l.url, l.status]),
    [
      [30, 'req-list', 'GET', '/api/v1/workspaces', 200],
      [30, 'req-nokey', 'GET', '/api/v1/workspaces', 401],
      [30, 'req-stream', 'POST', '/api/v1/chat/completions', 200],
    ],
  );
  for (const l of access) assert.ok(typeof l.ms === 'number' && l.ms >= 0, `ms: ${l.ms}`);
});

test('at warn: no access lines', async () => {
  const { gw, lines } = await gatewayLogging('warn');
  assert.equal((await gw.call('GET', '/workspaces')).status, 200);
  await gw.close();
  assert.deepEqual(
    lines.filter((l) => l.msg === 'request'),
    [],
  );
});
