import { test } from 'node:test';
import assert from 'node:assert/strict';
import { egressRule, internalAddress, parseEgress } from './egress.ts';

test('policy: none by default; hosts, wildcards, ports and addresses; bad entries name themselves', () => {
  assert.deepEqual(parseEgress(undefined), { rules: [] });
  assert.deepEqual(parseEgress('none'), { rules: [] });
  assert.deepEqual(
    parseEgress('registry.npmjs.org, *.github.com,example.com:8443,203.0.113.7,[2001:db8::1]:443').rules,
    [
      { host: 'registry.npmjs.org', wildcard: false, port: null },
      { host: 'github.com', wildcard: true, port: null },
      { host: 'example.com', wildcard: false, port: 8443 },
      { host: '203.0.113.7', wildcard: false, port: null },
      { host: '2001:db8::1', wildcard: false, port: 443 },
    ],
  );
  assert.throws(
    () => parseEgress('http://example.com'),
    /COHORT_INTERN_EGRESS: "http:\/\/example.com" is not a host, \*.domain, host:port or IP address/,
  );
  assert.throws(() => parseEgress('*'), /"\*" is not a host/);
});

const policy = parseEgress('example.com,*.github.com,db.internal:5432');
for (const [host, port, allowed] of [
  ['example.com', 443, true],
  ['EXAMPLE.com', 80, true],
  ['example.com', 22, false],
  ['www.example.com', 443, false],
  ['api.github.com', 443, true],
  ['github.com', 443, false],
  ['evilgithub.com', 443, false],
  ['db.internal', 5432, true],
  ['db.internal', 443, false],
  ['localhost', 443, false],
] as const) {
  test(`rule: ${host}:${port} is ${allowed ? 'allowed' : 'refused'}`, () => {
    assert.equal(egressRule(policy, host, port) !== null, allowed);
  });
}

for (const [ip, internal] of [
  ['127.0.0.1', true],
  ['10.1.2.3', true],
  ['172.16.0.1', true],
  ['172.32.0.1', false],
  ['192.168.1.1', true],
  ['169.254.169.254', true],
  ['100.64.0.1', true],
  ['0.0.0.0', true],
  ['::1', true],
  ['::ffff:127.0.0.1', true],
  ['fd00::1', true],
  ['fe80::1', true],
  // Ranges the hand-written check missed: multicast, reserved, benchmarking, and IPv6 forms that
  // carry an IPv4 address (NAT64, 6to4, Teredo).
  ['224.0.0.1', true],
  ['240.0.0.1', true],
  ['255.255.255.255', true],
  ['198.18.0.1', true],
  ['198.19.255.255', true],
  ['192.0.2.1', true],
  ['64:ff9b::7f00:1', true],
  ['2002:7f00:1::', true],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true],
  ['ff02::1', true],
  ['2001:db8::1', true],
  ['not an address', true],
  ['93.184.216.34', false],
  ['198.20.0.1', false],
  ['::ffff:93.184.216.34', false],
  ['2606:2800:220:1::1', false],
] as const) {
  test(`address: ${ip} is ${internal ? 'internal' : 'public'}`, () => {
    assert.equal(internalAddress(ip), internal);
  });
}
