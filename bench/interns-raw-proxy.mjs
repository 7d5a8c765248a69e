// For `npm run bench:interns` only: the floor of a Node relay, a node:http server that opens one
// undici request per stream to the daemon, forwarding the client's body as the turn, and copies
// the daemon's bytes back (no auth, no validation, no mapping to chat chunks). A client that goes
// away closes its daemon request.
import { createServer } from 'node:http';
import { Agent, request } from 'undici';

const daemon = process.argv[2];
const dispatcher = new Agent({ connections: null, headersTimeout: 0, bodyTimeout: 0 });
createServer(async (req, res) => {
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  try {
    let body = '';
    for await (const c of req) body += c;
    const up = await request(`${daemon}/v1/turns`, {
      method: 'POST',
      dispatcher,
      signal: ac.signal,
      headers: { 'content-type': 'application/json' },
      body: body || '{"prompt":"idle"}',
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for await (const b of up.body) res.write(b);
    res.end();
  } catch {
    res.destroy();
  }
}).listen(0, '127.0.0.1', function () {
  process.stdout.write(JSON.stringify({ port: this.address().port }) + '\n');
});
