// The benchmark's child processes besides the gateways: a loopback upstream that answers a chat
// completion at once (JSON, or a short SSE stream), and the raw pass-through proxy, about 30
// lines of node:http piping each request to the upstream: the practical limit of a Node gateway;
// and an OTLP/HTTP collector that takes every export (the broadcast section).
// Run as `node --import tsx bench/inference-servers.ts upstream|proxy|collector PORT [UPSTREAM_PORT]`.
import { createServer, request, Agent } from 'node:http';

const id = 'chatcmpl-bench';
const completion = Buffer.from(
  JSON.stringify({
    id,
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [
      { index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?' }, finish_reason: 'stop' },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18 },
  }),
);
const chunk = (delta: object, finish: string | null, usage?: object) =>
  `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
const stream = Buffer.from(
  chunk({ role: 'assistant', content: '' }, null) +
    ['Hello!', ' How', ' can', ' I', ' help?'].map((w) => chunk({ content: w }, null)).join('') +
    chunk({}, 'stop', { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 }) +
    'data: [DONE]\n\n',
);

function upstream(port: number) {
  createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const streamed = body.includes('"stream":true');
      res.writeHead(200, {
        'content-type': streamed ? 'text/event-stream' : 'application/json',
        'content-length': streamed ? stream.length : completion.length,
      });
      res.end(streamed ? stream : completion);
    });
  }).listen(port, '127.0.0.1', () => process.send?.('ready'));
}

function proxy(port: number, upstreamPort: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });
  createServer((req, res) => {
    const up = request(
      { host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers, agent },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  }).listen(port, '127.0.0.1', () => process.send?.('ready'));
}

/** Reads each export to its end and answers 200, counting the bytes (printed on SIGTERM). */
function collector(port: number) {
  let bytes = 0;
  let exports = 0;
  createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  }).listen(port, '127.0.0.1');
  process.on('SIGTERM', () => {
    process.stderr.write(`collector: ${exports} exports, ${(bytes / 1024).toFixed(0)} KiB\n`);
    process.exit(0);
  });
}

const [role, port, upstreamPort] = process.argv.slice(2);
if (role === 'upstream') upstream(Number(port));
else if (role === 'proxy') proxy(Number(port), Number(upstreamPort));
else if (role === 'collector') collector(Number(port));
