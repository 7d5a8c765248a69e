// The access log: one info line per finished response, with the request id, method, URL, status
// and duration, for refusals and for a stream (written when it ends); none below info. Fastify has
// no logger of its own (app.ts), so these lines and each request's req.log are all ours.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { startGateway, type Gateway } from './server.ts';

type Line = { level: number; msg: string; reqId?: string; method?: string; url?: string; status?: number; ms?: number };

async function gatewayLogging(level: string): Promise<{ gw: Gateway; lines: Line[]; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-access-'));
  const lines: Line[] = [];
  const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(JSON.parse(String(chunk)) as Line), cb()) });
  const config = loadConfig({ PORT: '0', COHORT_DATA_DIR: dataDir, LOG_LEVEL: level });
  const gw = await startGateway({ config, log: createLogger({ level, destination: sink }), store: { dataDir } });
  return { gw, lines, dataDir };
}

describe('access log', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  test('at info: one line per response, refusals and a finished stream included, each with its request id', async () => {
    const { gw, lines, dataDir } = await gatewayLogging('info');
    dirs.push(dataDir);
    const key = gw.bootstrap!.api_key;
    const workspaces = await fetch(`${gw.url}/workspaces`, { headers: { authorization: `Bearer ${gw.bootstrap!.management_key}`, 'x-request-id': 'req-list' } });
    assert.equal(workspaces.status, 200);
    await workspaces.text();
    const refused = await fetch(`${gw.url}/workspaces`, { headers: { 'x-request-id': 'req-nokey' } });
    assert.equal(refused.status, 401);
    await refused.text();
    const streamed = await fetch(`${gw.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'req-stream' },
      body: JSON.stringify({ model: 'local/scripted', stream: true, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    assert.equal(streamed.status, 200);
    assert.ok((await streamed.text()).endsWith('data: [DONE]\n\n'));
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
    const { gw, lines, dataDir } = await gatewayLogging('warn');
    dirs.push(dataDir);
    const res = await fetch(`${gw.url}/workspaces`, { headers: { authorization: `Bearer ${gw.bootstrap!.management_key}` } });
    assert.equal(res.status, 200);
    await res.text();
    await gw.close();
    assert.deepEqual(lines.filter((l) => l.msg === 'request'), []);
  });
});
