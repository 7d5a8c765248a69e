// For tests and benchmarks: a loopback stand-in for hosted providers, a real HTTP server that
// records what it received (path, key, model, body) and answers in OpenAI format
// (`…/chat/completions`) or Anthropic format (`…/messages`) from the scripted model, so a
// test's prompt directives (/say, /fail 503, /sleep …) drive it; and OpenAI's image API
// (`…/images/generations`) with a one-pixel image. In Anthropic format it caches as Anthropic does:
// a prompt prefix up to a `cache_control` breakpoint that it saw before is reported as cache reads. A key can be made to fail with
// a status, or to misbehave: answer garbage, break its stream, report an error after its 200,
// leave usage out, or hang up without an answer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { plan } from '../../src/gateway/inference/providers/local/scripted.ts';
import { completion, streamChunks } from '../../src/gateway/inference/providers/local/play.ts';
import { messagesEncoder, toMessage } from '../../src/gateway/inference/wire/anthropic-response.ts';
import { Cancel, type ChatChunk, type ChatRequest, type Completion } from '../../src/gateway/inference/types.ts';
import type { toAnthropicBody } from '../../src/gateway/inference/providers/anthropic/request.ts';

export type Received = {
  path: string;
  key: string | null;
  model: string;
  body: Record<string, unknown>;
  aborted: boolean;
};

/** error-mid-stream: a 200 stream whose text `partial` is followed, in the same write, by an
 * error (OpenAI: a chunk with `error`; Anthropic: an `error` event) quoting the key, as some providers do.
 * no-usage: the script's answer without usage (OpenAI format), as servers that ignore stream_options send it. */
export type Misbehaviour = 'malformed' | 'broken-stream' | 'truncated' | 'hangup' | 'error-mid-stream' | 'no-usage';

export type FakeUpstream = {
  url: string;
  received: Received[];
  /** Answer requests made with this key with this status (an error body echoing the key, as some providers do). */
  failKey(key: string, status: number): void;
  /** Requests made with this key get this misbehaviour (null: behave again). */
  misbehave(key: string, how: Misbehaviour | null): void;
  close(): Promise<void>;
};

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

/** Anthropic bodies back to OpenAI messages, just enough for the scripted model to read them. */
function asChat(
  body: ReturnType<typeof toAnthropicBody> & {
    messages: {
      role: string;
      content: {
        type: string;
        text?: string;
        id?: string;
        name?: string;
        input?: unknown;
        tool_use_id?: string;
        content?: string;
      }[];
    }[];
  },
): ChatRequest {
  const messages = body.messages.flatMap((m) => {
    const text = m.content
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('');
    const calls = m.content
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({
        id: b.id!,
        type: 'function' as const,
        function: { name: b.name!, arguments: JSON.stringify(b.input) },
      }));
    const results = m.content
      .filter((b) => b.type === 'tool_result')
      .map((b) => ({ role: 'tool' as const, tool_call_id: b.tool_use_id, content: b.content }));
    return [
      ...results,
      ...(text || calls.length
        ? [{ role: m.role as 'user' | 'assistant', content: text, ...(calls.length ? { tool_calls: calls } : {}) }]
        : []),
    ];
  });
  return {
    messages,
    tools: ((body.tools as { name: string }[] | undefined) ?? []).map((t) => ({
      type: 'function',
      function: { name: t.name },
    })),
  };
}

function misbehaveOn(res: ServerResponse, how: Misbehaviour, o: { stream: boolean; anthropic: boolean; key: string }) {
  if (how === 'hangup') return void res.socket?.destroy();
  if (how === 'malformed' && !o.stream)
    return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [tru');
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk: ChatChunk = {
    id: 'x',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { role: 'assistant', content: 'partial' }, finish_reason: null }],
  };
  if (how === 'error-mid-stream') {
    const message = `quota exceeded for key ${o.key}`;
    if (!o.anthropic)
      return void res.end(
        `data: ${JSON.stringify(chunk)}\n\ndata: ${JSON.stringify({ ...chunk, choices: [], error: { message } })}\n\n`,
      );
    const encoder = messagesEncoder({ model: 'm' });
    return void res.end(encoder.push(chunk) + encoder.error(message, 500));
  }
  const partial = `data: ${JSON.stringify(chunk)}\n\n`;
  // In one write, so the text and the bad event arrive in the same read.
  if (how === 'malformed') return void res.end(`${partial}data: {"choices": nope\n\n`);
  res.write(partial);
  if (how === 'truncated') res.end();
  else setTimeout(() => res.socket?.destroy(), 20);
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  o: {
    received: Received[];
    failing: Map<string, number>;
    misbehaving: Map<string, Misbehaviour>;
    delayMs: number;
    cached: Set<string>;
  },
) {
  if (req.url!.endsWith('/images/generations')) return answerImage(req, res, o.received);
  const anthropic = req.url!.endsWith('/messages');
  const key = anthropic
    ? ((req.headers['x-api-key'] as string | undefined) ?? null)
    : (req.headers.authorization?.replace(/^Bearer /, '') ?? null);
  const body = JSON.parse(await readBody(req));
  const entry: Received = { path: req.url!, key, model: body.model, body, aborted: false };
  o.received.push(entry);
  if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs));
  const cancel = new Cancel();
  res.on('close', () => {
    if (!res.writableFinished) {
      entry.aborted = true;
      cancel.cancel();
    }
  });
  const how = key ? o.misbehaving.get(key) : undefined;
  if (how && how !== 'no-usage') return misbehaveOn(res, how, { stream: body.stream === true, anthropic, key: key! });
  const failing = key ? o.failing.get(key) : undefined;
  const p = failing ? ({ kind: 'fail', status: failing } as const) : plan(anthropic ? asChat(body) : body);
  if (p.kind === 'fail') {
    res.writeHead(p.status, { 'content-type': 'application/json' });
    return void res.end(
      JSON.stringify({ error: { message: `upstream refused key ${key} with ${p.status}`, type: 'fake' } }),
    );
  }
  const id = `up-${randomUUID()}`;
  // Anthropic-style prompt caching: a prefix up to a cache breakpoint that was sent before is read from cache.
  const text = anthropic ? JSON.stringify([body.system ?? null, body.messages]) : '';
  const prefix = text.lastIndexOf('"cache_control"') >= 0 ? text.slice(0, text.lastIndexOf('"cache_control"')) : null;
  const hit = prefix !== null && o.cached.has(prefix);
  if (prefix !== null) o.cached.add(prefix);
  const cacheRead = (u: Completion['usage'] | null) => {
    if (hit && u) u.prompt_tokens_details = { cached_tokens: u.prompt_tokens };
  };
  try {
    if (!body.stream) {
      const c = (await completion(p, { id, model: body.model, cancel })) as Completion;
      cacheRead(c.usage);
      if (how === 'no-usage') delete c.usage;
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(anthropic ? toMessage(c) : c));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const encoder = messagesEncoder({ model: body.model });
    for await (const chunk of streamChunks(p, { id, model: body.model, cancel })) {
      cacheRead(chunk.usage);
      if (how === 'no-usage') delete chunk.usage;
      res.write(anthropic ? encoder.push(chunk as ChatChunk) : `data: ${JSON.stringify(chunk)}\n\n`);
    }
    res.end(anthropic ? encoder.end() : 'data: [DONE]\n\n');
  } catch {
    res.destroy();
  }
}

/** A one-pixel PNG, base64. */
export const FAKE_IMAGE_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** OpenAI's image API (`POST …/images/generations`): one image, its revised prompt, token usage. */
async function answerImage(req: IncomingMessage, res: ServerResponse, received: Received[]) {
  const body = JSON.parse(await readBody(req));
  const key = req.headers.authorization?.replace(/^Bearer /, '') ?? null;
  received.push({ path: req.url!, key, model: body.model, body, aborted: false });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      created: 1,
      data: [{ b64_json: FAKE_IMAGE_B64, revised_prompt: `a picture of ${body.prompt}` }],
      usage: { input_tokens: 10, output_tokens: 100, total_tokens: 110 },
    }),
  );
}

/** `delayMs`: an injected latency before each answer (an endpoint's time to first token). */
export async function startFakeUpstream(opts: { delayMs?: number } = {}): Promise<FakeUpstream> {
  const received: Received[] = [];
  const failing = new Map<string, number>();
  const misbehaving = new Map<string, Misbehaviour>();
  const cached = new Set<string>();
  const server = createServer(
    (req, res) =>
      void answer(req, res, { received, failing, misbehaving, delayMs: opts.delayMs ?? 0, cached }).catch(() =>
        res.destroy(),
      ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    failKey: (key, status) => void failing.set(key, status),
    misbehave: (key, how) => void (how ? misbehaving.set(key, how) : misbehaving.delete(key)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
