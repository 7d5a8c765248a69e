// The operator's egress policy, pure: which host:port a list like COHORT_INTERN_EGRESS allows, and
// which addresses a name must never lead to (the host's loopback, private and other special
// ranges). Shared by interns' egress proxy (src/gateway/interns/egress.ts) and the web_fetch and
// web_search server tools (src/gateway/inference/tools/).
// May import: node built-ins, ipaddr.js.
import ipaddr from 'ipaddr.js';

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
