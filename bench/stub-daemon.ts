// A protocol-faithful stand-in for an intern daemon (docs/daemon-protocol.md) used only by
// `npm run bench:interns`: it answers at once, with no turn lock, so the benchmark measures the
// gateway's relay and not the agent. `/repeat N TEXT` streams N text events then `completed`
// (at once, or MS apart after a first line `/pace MS`, as a model streams); `idle` sends one
// text event and then stays open and silent.
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { formatRunEvent, type RunEvent, type RunEventBody } from '../src/shared/daemon-protocol.ts';

let runs = 0;
const server = createServer(async (req, res) => {
  if (req.url === '/v1/health')
    return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok","protocol":1}');
  if (req.method !== 'POST' || req.url !== '/v1/turns') return void res.writeHead(404).end();
  let body = '';
  for await (const c of req) body += c;
  const prompt = (JSON.parse(body) as { prompt: string }).prompt;
  const run = `run_${++runs}`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let seq = 0;
  const send = (e: RunEventBody) => res.write(formatRunEvent({ ...e, seq: ++seq } as RunEvent));
  send({ type: 'run', run_id: run, session_id: `s_${run}`, approval_mode: 'self-drive' });
  send({ type: 'model', model: 'local/scripted' });
  if (prompt === 'idle') return void send({ type: 'text', text: 'x' });
  const paced = /^\/pace (\d+)\n/.exec(prompt);
  const script = paced ? prompt.slice(paced[0].length) : prompt;
  const m = /^\/repeat (\d+) (.*)$/.exec(script);
  const n = m ? Number(m[1]) : 1;
  for (let i = 0; i < n; i++) {
    if (paced && i) await sleep(Number(paced[1]));
    if (res.destroyed) return;
    send({ type: 'text', text: m?.[2] ?? script });
  }
  send({
    type: 'completed',
    stop_reason: 'end_turn',
    usage: { prompt_tokens: 1, completion_tokens: n, total_tokens: n + 1 },
    model: 'local/scripted',
  });
  res.end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(
    JSON.stringify({ listening: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }) + '\n',
  );
});
