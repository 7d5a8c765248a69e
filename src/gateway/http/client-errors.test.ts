// Requests node's HTTP parser refuses before any route: answered in the error shape, the
// connection closed, and the gateway keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';

let gw: TestGateway;
before(async () => {
  gw = await startTestGateway();
});
after(() => gw.close());

/** Sends raw bytes and reads until the server closes the connection. */
function raw(request: string): Promise<string> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    let out = '';
    const s = connect({ host: hostname, port: Number(port) }, () => s.write(request));
    s.on('data', (d) => (out += d.toString()));
    s.on('close', () => resolve(out));
    s.on('error', reject);
  });
}

const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

test('an oversized request head is 431 and a malformed request line 400, in the error shape', async () => {
  const big = await raw(`GET /api/v1/workspaces?q=${'x'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`);
  assert.match(big, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  assert.deepEqual(bodyOf(big), { error: { code: 431, message: 'the request line and headers exceed 16 KiB' } });
  const garbage = await raw('NOT AN HTTP REQUEST\r\n\r\n');
  assert.match(garbage, /^HTTP\/1\.1 400 Bad Request\r\n/);
  assert.deepEqual(bodyOf(garbage), { error: { code: 400, message: 'malformed HTTP request' } });
  assert.equal((await gw.call('GET', '/workspaces')).status, 200);
});
