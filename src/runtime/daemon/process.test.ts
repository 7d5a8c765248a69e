// The daemon as the provisioner runs it: its own process (runDaemon), configured by environment,
// announcing its address on stdout, shutting down its agent on SIGTERM, and never logging secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { daemonPaths } from '../../shared/daemon-protocol.ts';
import { startScriptedServer } from '../../../test/helpers/scripted-server.ts';
import { DaemonClient } from '../../../test/helpers/daemon-client.ts';

test('runDaemon: env config, address on stdout, secrets never logged, SIGTERM stops the agent too', async () => {
  const model = await startScriptedServer();
  const dir = mkdtempSync(join(tmpdir(), 'cohort-daemon-proc-'));
  const secret = 'daemon-secret-7f3a9c';
  const apiKey = 'sk-intern-key-b81d2e';
  const daemon = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./main.ts', import.meta.url)), '--dir', dir],
    {
      env: {
        PATH: process.env.PATH,
        COHORT_DAEMON_SECRET: secret,
        COHORT_AGENT_BASE_URL: model.url,
        COHORT_AGENT_API_KEY: apiKey,
        COHORT_AGENT_MODEL: 'local/scripted',
        COHORT_INTERN_ID: 'int_1',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  daemon.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  try {
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: daemon.stdout }).once('line', resolve),
    );
    const { listening } = JSON.parse(line) as { listening: string };
    assert.match(listening, /^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new DaemonClient(listening, secret);
    const status = (await client.json('GET', daemonPaths.status)).json as {
      intern_id: string;
      agent: { pid: number; state: string };
    };
    assert.equal(status.intern_id, 'int_1');
    assert.equal(status.agent.state, 'ready');

    assert.equal((await client.turn({ prompt: '/say fine' })).events.at(-1)?.type, 'completed');
    assert.equal((await client.turn({ prompt: '/fail 401' })).events.at(-1)?.type, 'failed');
    assert.equal((await new DaemonClient(listening, 'wrong').json('GET', daemonPaths.status)).status, 401);

    const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.equal(existsSync(`/proc/${status.agent.pid}`), false);
    assert.ok(stderr.includes('daemon listening'));
    assert.equal(stderr.includes(secret), false);
    assert.equal(stderr.includes(apiKey), false);
  } finally {
    daemon.kill('SIGKILL');
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
