// A Redis of a test's own: `redis-server` on a free loopback port, with nothing saved, so a test
// can freeze it (SIGSTOP: it keeps accepting connections and answers nothing, as a hung Redis
// does), thaw it (SIGCONT) or stop it without touching the shared one at REDIS_URL.
// `redisServerMissing` says why such a test must skip (no redis-server on this machine), or null.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { freePort } from './gateway-process.ts';

const BINARY = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p));

export const redisServerMissing: string | null = BINARY
  ? null
  : 'redis-server is not installed (/usr/bin/redis-server), so no Redis of the test’s own can be frozen';

export type OwnRedis = {
  url: string;
  child: ChildProcess;
  /** SIGSTOP: connections are still accepted by the kernel; nothing is answered. */
  freeze(): void;
  /** SIGCONT: everything sent meanwhile is answered. */
  thaw(): void;
  stop(): Promise<void>;
};

/** Resolves once a PING is answered with PONG. */
async function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(port, '127.0.0.1');
    s.setTimeout(500, () => (s.destroy(), resolve(false)));
    s.on('error', () => resolve(false));
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      s.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
  });
}

export async function startOwnRedis(): Promise<OwnRedis> {
  if (!BINARY) throw new Error(redisServerMissing!);
  const port = await freePort();
  const child = spawn(
    BINARY,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  for (let i = 0; !(await pong(port)); i++) {
    if (child.exitCode !== null || i > 100) throw new Error(`redis-server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  let frozen = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    child,
    freeze() {
      frozen = true;
      child.kill('SIGSTOP');
    },
    thaw() {
      frozen = false;
      child.kill('SIGCONT');
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      if (frozen) child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
  };
}
