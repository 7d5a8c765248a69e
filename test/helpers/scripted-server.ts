// A loopback OpenAI-compatible chat-completions server over the scripted model. It stands in
// for a hosted model provider in tests of parts that talk to one (the agent, the daemon).
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { plan, type ScriptRequest } from '../../src/gateway/inference/providers/local/scripted.ts';
import { completion, streamChunks } from '../../src/gateway/inference/providers/local/play.ts';
import { Cancel } from '../../src/gateway/inference/types.ts';

export type ScriptedServer = { url: string; requests: unknown[]; close(): Promise<void> };

async function readJson(req: IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return JSON.parse(body);
}

export async function startScriptedServer(): Promise<ScriptedServer> {
  const requests: unknown[] = [];
  const server = createServer(async (req, res) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const cancel = new Cancel();
    res.on('close', () => cancel.cancel());
    try {
      const body = (await readJson(req)) as ScriptRequest & { stream?: boolean; model?: string };
      requests.push(body);
      const p = plan(body);
      if (p.kind === 'fail') {
        res.writeHead(p.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `scripted failure ${p.status}`, code: p.status } }));
        return;
      }
      const id = `chatcmpl-${randomUUID()}`;
      if (!body.stream) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(await completion(p, { id, cancel })));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for await (const chunk of streamChunks(p, { id, cancel })) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    } catch (err) {
      if (cancel.aborted) return;
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: String(err) } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
