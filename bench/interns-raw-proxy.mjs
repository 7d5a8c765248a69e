// For `npm run bench:interns` only: the floor of a Node relay holding streams, a node:http server
// that opens one undici request per stream to the daemon and copies its bytes (no auth, no mapping).
import { createServer } from 'node:http';
import { Agent, request } from 'undici';

const daemon = process.argv[2];
const dispatcher = new Agent({ connections: null, headersTimeout: 0, bodyTimeout: 0 });
createServer(async (req, res) => {
  for await (const _ of req);
  const up = await request(`${daemon}/v1/turns`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body: '{"prompt":"idle"}' });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for await (const b of up.body) res.write(b);
  res.end();
}).listen(0, '127.0.0.1', function () {
  process.stdout.write(JSON.stringify({ port: this.address().port }) + '\n');
});
