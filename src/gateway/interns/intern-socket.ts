// The gateway's door for isolated interns: a unix socket in `<data dir>/run/gw/`, bound into every
// intern's sandbox, where the daemon forwards its agent's model requests. Connections are handed
// to the same HTTP server as TCP ones (same keys: an intern key is scoped to its intern), which
// serves them the model routes an agent uses and nothing else (agentMayCall). Each gateway has its own socket, so interns reach whichever gateways run on this host,
// also after a restart on another port. Sockets that gateways left behind are removed at start.
// May import: node built-ins.
import { createServer, connect, type NetConnectOpts, type Server as NetServer } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export type InternSocket = { path: string; close(): Promise<void> };

const internConnections = new WeakSet<object>();
/** Whether a connection came in through an intern socket (egress CONNECT is served only to those). */
export const fromIntern = (socket: object): boolean => internConnections.has(socket);

/** The routes an agent calls through its daemon's forwarder: the three API styles' model requests
 * (the built-in agent, Claude Code's /messages, Codex's /responses) and the model list. Anything
 * else (metrics, the console, management, other interns) answers 404 there. */
const AGENT_ROUTES = new Set([
  'POST /api/v1/chat/completions',
  'POST /api/v1/messages',
  'POST /api/v1/responses',
  'GET /api/v1/models',
]);

/** Whether a request that came in through an intern socket may reach `route` (a route pattern). */
export const agentMayCall = (method: string, route: string | undefined): boolean =>
  route !== undefined && AGENT_ROUTES.has(`${method} ${route}`);

/** Whether something accepts connections at a socket file or address (a live gateway or daemon); one that holds the connect past a second counts as alive. */
export function acceptsConnections(target: NetConnectOpts): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(target);
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.setTimeout(1_000, () => done(true));
  });
}

async function sweepStaleSockets(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.sock'))) {
    const p = join(dir, f);
    if (!(await acceptsConnections({ path: p }))) rmSync(p, { force: true });
  }
}

export async function listenForInterns(opts: { dataDir: string; server: HttpServer }): Promise<InternSocket> {
  const dir = join(opts.dataDir, 'run', 'gw');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await sweepStaleSockets(dir);
  const path = join(dir, `${randomBytes(6).toString('hex')}.sock`);
  const net: NetServer = createServer((socket) => {
    internConnections.add(socket);
    opts.server.emit('connection', socket);
  });
  await new Promise<void>((resolve, reject) => {
    net.once('error', reject);
    net.listen(path, () => resolve());
  });
  return {
    path,
    close: () =>
      new Promise((resolve) => {
        rmSync(path, { force: true });
        net.close(() => resolve());
      }),
  };
}
