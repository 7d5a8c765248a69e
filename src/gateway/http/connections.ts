// Connection admission for the gateway's HTTP server (docs/abuse-resistance.md): caps on open
// connections for the whole gateway and per client address, enforced at accept, before node's
// HTTP parser is attached, so a refusal costs a close and nothing else; and a deadline for a new
// connection to deliver its first complete request head (node's headersTimeout only starts at a
// request's first byte, so a connection that sends nothing would otherwise be held until the
// client lets go). The header and whole-request timeouts themselves are node's, set in app.ts.
// And a connection closed after an answer lingers: it is shut for writing and keeps reading (and
// dropping) what its client still sends, for a bounded time, instead of closing at once. An
// answer given while the body still comes (a refused upload) was otherwise lost: the client's next
// write met the closed socket's reset before it read the answer, and a client that waited for it
// waited forever (it held CI to its limit once). Requests that arrive meanwhile are not run.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isIPv6 } from 'node:net';

export type ConnectionLimits = {
  max: number;
  perAddress: number;
  idleTimeoutMs: number;
  /** How long a connection closed after an answer reads what its client still sends (5 s, as nginx's lingering_timeout). */
  lingerMs?: number;
};

const LINGER_MS = 5_000;

/** Why a connection was refused: the gateway's cap or its address's. */
export type Refused = 'gateway' | 'address';

/** The address a per-address cap counts: IPv4 as is (also when IPv4-mapped), IPv6 by its /64,
 * the block one subscriber is usually given (so an attacker cannot rotate through it). */
export function addressKey(address: string | undefined): string {
  if (!address) return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return (
    groups
      .slice(0, 4)
      .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
      .join(':') + '::/64'
  );
}

const FIRST_REQUEST = Symbol('cohort.firstRequestTimer');
type Tracked = Socket & { [FIRST_REQUEST]?: NodeJS.Timeout | null };

const closeIdle = (socket: Socket) => socket.destroy();

/** Replaces net's destroySoon, which node:http calls once the last response on a connection is
 * written: the write side ends (the client reads the answer, then the end), and the socket is
 * destroyed once the client ends its side too, or `ms` after the answer was written. */
function lingerOnClose(socket: Socket, ms: number): void {
  socket.destroySoon = function lingering(this: Socket) {
    if (this.writable) this.end();
    const destroy = () => this.destroy();
    if (this.readableEnded) this.once('finish', destroy);
    else this.once('end', destroy);
    const arm = () => {
      const timer = setTimeout(destroy, ms);
      timer.unref();
      this.once('close', () => clearTimeout(timer));
    };
    if (this.writableFinished) arm();
    else this.once('finish', arm);
  };
}

/** Installs the caps on a server that has not started listening; `refused` is told of each refusal
 * (the caller aggregates, since a flood must not become a flood of log lines). */
export function guardConnections(server: Server, limits: ConnectionLimits, refused: (why: Refused) => void): void {
  // node's own check, made before the connection is handed to anything.
  server.maxConnections = limits.max;
  server.on('drop', () => refused('gateway'));
  const perAddress = new Map<string, number>();
  // node:http parses a connection in its 'connection' listener: admission runs first and only an
  // admitted socket reaches it.
  const parse = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Tracked) => {
    const key = addressKey(socket.remoteAddress);
    const open = perAddress.get(key) ?? 0;
    // Interns' connections come on the gateway's unix sockets (no address; only interns reach
    // them): they share no address, and their keys' concurrency limits bound them instead.
    if (key && limits.perAddress > 0 && open >= limits.perAddress) {
      refused('address');
      socket.destroy();
      return;
    }
    perAddress.set(key, open + 1);
    socket[FIRST_REQUEST] = setTimeout(closeIdle, limits.idleTimeoutMs, socket);
    lingerOnClose(socket, limits.lingerMs ?? LINGER_MS);
    socket.once('close', () => {
      clearTimeout(socket[FIRST_REQUEST] ?? undefined);
      const n = (perAddress.get(key) ?? 1) - 1;
      if (n > 0) perAddress.set(key, n);
      else perAddress.delete(key);
    });
    for (const l of parse) l.call(server, socket);
  });
  const handle = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as Tracked;
    // A request that arrives on a lingering connection could never be answered: it is not run.
    if (socket.writableEnded) {
      socket.destroy();
      return;
    }
    const timer = socket[FIRST_REQUEST];
    if (timer) {
      clearTimeout(timer);
      socket[FIRST_REQUEST] = null;
    }
    for (const l of handle) l.call(server, req, res);
  });
}
