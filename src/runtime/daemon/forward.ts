// Inside an isolated runtime there is no network: the agent reaches its model endpoint at a
// loopback port of the daemon's own, and each connection is carried to one of the gateway
// sockets bound into the sandbox (any gateway on this host serves it; a gateway that restarted
// elsewhere or left a stale file is skipped). Bytes are piped as they are: HTTP stays end to end.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Forwarder = { url: string; close(): Promise<void> };

/** Gateway sockets, newest first: a gateway started later is likelier to be alive. */
function candidates(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.sock'))
      .map((f) => join(dir, f))
      .map((p) => ({ p, t: statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.t - a.t)
      .map((c) => c.p);
  } catch {
    return [];
  }
}

function connectAny(paths: string[], preferred: string | null): Promise<Socket | null> {
  const order = preferred && paths.includes(preferred) ? [preferred, ...paths.filter((p) => p !== preferred)] : paths;
  return new Promise((resolve) => {
    const next = (i: number) => {
      if (i >= order.length) return resolve(null);
      const s = connect(order[i]!);
      s.once('connect', () => {
        s.removeAllListeners('error');
        resolve(Object.assign(s, { via: order[i]! }));
      });
      s.once('error', () => next(i + 1));
    };
    next(0);
  });
}

export async function startForwarder(opts: { socketsDir: string }): Promise<Forwarder> {
  let last: string | null = null;
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    client.on('error', () => {});
    void connectAny(candidates(opts.socketsDir), last).then((upstream) => {
      if (!upstream) return void client.destroy();
      last = (upstream as Socket & { via: string }).via;
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
