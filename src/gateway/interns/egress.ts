// Outbound network for isolated interns, as the operator allows it (COHORT_INTERN_EGRESS): an
// intern has no network of its own; its tools reach the internet through an HTTP CONNECT proxy
// served on the gateway's intern socket (and so only to interns), for the hosts on the list.
// A listed name that resolves to a loopback, private or link-local address is refused too, so a
// name cannot lead back into the host (PostgreSQL, Redis, the cloud's metadata service); an
// address the operator lists literally is taken as meant. Policy parsing and matching are pure.
// May import: node built-ins, ipaddr.js.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { connect, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export {
  parseEgress,
  egressRule,
  internalAddress,
  type EgressPolicy,
  type EgressRule,
} from '../../shared/egress-policy.ts';
import { egressRule, internalAddress, type EgressPolicy } from '../../shared/egress-policy.ts';

function refuse(socket: Duplex, status: number, message: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${status === 403 ? 'Forbidden' : 'Bad Gateway'}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}\n`,
  );
}

/** The HTTP server's `connect` handler: tunnels for interns' sockets within the policy, 403 otherwise. */
export function egressHandler(opts: {
  policy: EgressPolicy;
  fromIntern: (socket: Duplex) => boolean;
  onTunnel?: (target: string, allowed: boolean) => void;
}) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => {});
    const m = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
    if (!opts.fromIntern(socket) || !m) return refuse(socket, 403, 'CONNECT is for interns, to host:port');
    const host = m[1]!.replace(/^\[|\]$/g, '');
    const port = Number(m[2]);
    const rule = egressRule(opts.policy, host, port);
    opts.onTunnel?.(`${host}:${port}`, rule !== null);
    if (!rule)
      return refuse(socket, 403, `${host}:${port} is not on this installation's egress list (COHORT_INTERN_EGRESS)`);
    const literal = isIP(rule.host) !== 0 && !rule.wildcard;
    void lookup(host, { all: true }).then(
      (addrs) => {
        const usable = literal ? addrs : addrs.filter((a) => !internalAddress(a.address));
        if (!usable.length) return refuse(socket, 403, `${host} resolves to an internal address`);
        const upstream = connect({ host: usable[0]!.address, port });
        upstream.once('connect', () => {
          socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(socket).pipe(upstream);
        });
        upstream.on('error', () =>
          upstream.readyState === 'opening'
            ? refuse(socket, 502, `could not connect to ${host}:${port}`)
            : socket.destroy(),
        );
        socket.on('close', () => upstream.destroy());
      },
      () => refuse(socket, 502, `could not resolve ${host}`),
    );
  };
}
