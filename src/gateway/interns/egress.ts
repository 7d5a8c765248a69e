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
import ipaddr from 'ipaddr.js';
import { lookup } from 'node:dns/promises';

export type EgressRule = { host: string; wildcard: boolean; port: number | null };
export type EgressPolicy = { rules: EgressRule[] };

/** `none` (or empty): no egress. Otherwise hosts, comma-separated: `example.com`, `*.example.com` (subdomains), `host:8443`, `203.0.113.7`. Without a port: 80 and 443. */
export function parseEgress(spec: string | undefined): EgressPolicy {
  const s = (spec ?? '').trim();
  if (!s || s === 'none') return { rules: [] };
  const rules = s.split(',').map((raw) => {
    const entry = raw.trim().toLowerCase();
    const m = /^(\*\.)?([a-z0-9.-]+|\[[0-9a-f:]+\])(?::(\d{1,5}))?$/.exec(entry);
    if (!m || m[2]!.startsWith('.') || m[2]!.endsWith('.'))
      throw new Error(`COHORT_INTERN_EGRESS: "${raw.trim()}" is not a host, *.domain, host:port or IP address`);
    return { host: m[2]!.replace(/^\[|\]$/g, ''), wildcard: m[1] !== undefined, port: m[3] ? Number(m[3]) : null };
  });
  return { rules };
}

/** The rule that lets an intern reach host:port, if any. */
export function egressRule(policy: EgressPolicy, host: string, port: number): EgressRule | null {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return (
    policy.rules.find((r) => {
      const portOk = r.port === null ? port === 80 || port === 443 : r.port === port;
      const hostOk = r.wildcard ? h.endsWith(`.${r.host}`) : h === r.host;
      return portOk && hostOk;
    }) ?? null
  );
}

/** Addresses a name must not lead to: anything but a public unicast address, by ipaddr.js's
 * table of special ranges (loopback, private, link-local, CGNAT, multicast, reserved, benchmarking,
 * and the IPv6 forms that embed an IPv4 address: mapped, NAT64, 6to4, Teredo). Not an address: true. */
export function internalAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return true;
  return ipaddr.process(ip).range() !== 'unicast';
}

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
