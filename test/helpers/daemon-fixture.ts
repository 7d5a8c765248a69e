// Test fixture: a real daemon (this process) with a real agent child process, in a temp intern
// directory, aimed at a loopback scripted model server. Everything is torn down by close().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptedServer, type ScriptedServer } from './scripted-server.ts';
import { startDaemon, type DaemonOptions, type RunningDaemon } from '../../src/runtime/daemon/main.ts';
import { DaemonClient } from './daemon-client.ts';

export const SECRET = 'test-secret-0123456789';

export const miniAgent = {
  command: process.execPath,
  args: ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('./acp-mini-agent.ts', import.meta.url))],
};

export type Fixture = {
  daemon: RunningDaemon;
  client: DaemonClient;
  model: ScriptedServer;
  dir: string;
  restart(): Promise<void>;
  close(): Promise<void>;
};

export async function startFixture(opts: Partial<DaemonOptions> = {}): Promise<Fixture> {
  const model = await startScriptedServer();
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cohort-daemon-'));
  const options: DaemonOptions = {
    secret: SECRET,
    dir,
    logLevel: 'warn',
    model: { baseUrl: model.url, apiKey: 'intern-key', model: 'local/scripted' },
    ...opts,
  };
  const f: Fixture = {
    daemon: await startDaemon(options),
    client: null as unknown as DaemonClient,
    model,
    dir,
    async restart() {
      await f.daemon.close();
      f.daemon = await startDaemon(options);
      f.client = new DaemonClient(f.daemon.url, SECRET);
    },
    async close() {
      await f.daemon.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  f.client = new DaemonClient(f.daemon.url, SECRET);
  return f;
}
