// `cohort chat INTERN_ID`: an interactive terminal client for a person, on the public API only.
// Streams text, shows reasoning dimmed, turns a permission request into a choice among the offered
// options and a question into a prompt per field, sends the reply and carries on, keeps the
// session across prompts and prints errors in words. A line ending in `\` continues the prompt.
// Commands: `:new` (new session), `:mode manual|self-drive`, `:quit`.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { SseDecoder } from '../shared/sse/read.ts';
import { InternChunk } from '../gateway/interns/chat.schemas.ts';
import { parseJson } from '../shared/parse.ts';
import { StreamError, type ToolCall } from '../shared/openai.ts';
import { askAnswer, describeError, type Asker } from './chat-prompts.ts';

const USAGE =
  'usage: cohort chat INTERN_ID [--base-url URL] [--key KEY] [--mode manual|self-drive] [--session ID]\n' +
  '(env: COHORT_BASE_URL, else http://127.0.0.1:$PORT/api/v1; COHORT_API_KEY, else the api_key of $COHORT_DATA_DIR/bootstrap.json, ./data by default)';
const color = !process.env.NO_COLOR;
const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
const isMode = (m: string): m is 'manual' | 'self-drive' => m === 'manual' || m === 'self-drive';

const dataDir = () => resolve(process.env.COHORT_DATA_DIR || './data');

/** Beside a gateway started with `npm start`, the ordinary key it bootstrapped: the first chat needs no export. */
function bootstrapKey(): string | undefined {
  try {
    const key = (JSON.parse(readFileSync(join(dataDir(), 'bootstrap.json'), 'utf8')) as { api_key?: unknown }).api_key;
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** A refusal's body (docs/reference/errors.md). */
const Refusal = z.object({ error: StreamError });

type Outcome = { sessionId: string | null; call: ToolCall | null };

export async function runChat(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'base-url': { type: 'string' },
      key: { type: 'string' },
      mode: { type: 'string' },
      session: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const out = (s: string) => process.stdout.write(s);
  if (values.help || positionals.length !== 1) {
    out(USAGE + '\n');
    return values.help ? 0 : 2;
  }
  const key = values.key || process.env.COHORT_API_KEY || bootstrapKey();
  if (!key) {
    out(
      `error: no API key: pass --key, set COHORT_API_KEY, or run beside the gateway's data dir (${dataDir()}: its bootstrap.json has one)\n`,
    );
    return 2;
  }
  let mode = values.mode ?? 'self-drive';
  if (!isMode(mode)) {
    out(`error: --mode must be manual or self-drive, not ${JSON.stringify(mode)}\n`);
    return 2;
  }
  const url = `${(values['base-url'] || process.env.COHORT_BASE_URL || `http://127.0.0.1:${process.env.PORT || 8080}/api/v1`).replace(/\/$/, '')}/interns/${encodeURIComponent(positionals[0]!)}/chat/completions`;
  let sessionId: string | null = values.session ?? null;

  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  const ask: Asker = async (question) => {
    out(question);
    const r = await lines.next();
    return r.done ? null : r.value;
  };

  async function send(body: Record<string, unknown>): Promise<Outcome | null> {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ stream: true, ...body }),
      });
    } catch (err) {
      out(`error: cannot reach the service (${(err as Error).message})\n`);
      return null;
    }
    if (res.status === 202) {
      out(dim('(delivered into the running turn)') + '\n');
      return null;
    }
    if (res.status !== 200) {
      const refusal = Refusal.safeParse(await res.json().catch(() => null)).data;
      out(describeError(res.status, refusal, res.headers.get('retry-after')) + '\n');
      return null;
    }
    return readStream(res);
  }

  async function readStream(res: Response): Promise<Outcome> {
    const outcome: Outcome = { sessionId: null, call: null };
    let inReasoning = false;
    const parser = new SseDecoder((data) => {
      if (data === '[DONE]') return;
      const c = parseJson(InternChunk, data, 'a chunk of the stream');
      const choice = c.choices[0];
      if (!choice) {
        outcome.sessionId = c.session_id ?? outcome.sessionId;
        return;
      }
      const d = choice.delta;
      if (d.reasoning) {
        inReasoning = true;
        out(dim(d.reasoning));
      }
      if (d.content) {
        if (inReasoning) out('\n');
        inReasoning = false;
        out(d.content);
      }
      if (d.tool_calls?.[0]) outcome.call = d.tool_calls[0];
      if (choice.finish_reason === 'error' && c.error)
        out(`\n${describeError(c.error.code, { error: c.error }, null)}`);
    });
    for await (const buf of res.body!) parser.feed(buf as Uint8Array);
    out('\n');
    return outcome;
  }

  for (;;) {
    let prompt = await ask('you> ');
    if (prompt === null) break;
    while (prompt.endsWith('\\')) {
      const more = await ask('...> ');
      if (more === null) break;
      prompt = prompt.slice(0, -1) + '\n' + more;
    }
    const cmd = prompt.trim();
    if (!cmd) continue;
    if (cmd === ':quit') break;
    if (cmd === ':new') {
      sessionId = null;
      out(dim('(new session)') + '\n');
      continue;
    }
    if (cmd.startsWith(':mode')) {
      const m = cmd.split(/\s+/)[1];
      if (m === undefined || isMode(m)) {
        mode = m ?? mode;
        out(dim(`(approval mode: ${mode})`) + '\n');
      } else out(`error: the mode is manual or self-drive, not ${JSON.stringify(m)} (still ${mode})\n`);
      continue;
    }
    let result = await send({
      messages: [{ role: 'user', content: prompt }],
      approval_mode: mode,
      ...(sessionId ? { session_id: sessionId } : {}),
    });
    while (result) {
      sessionId = result.sessionId ?? sessionId;
      if (!result.call || !sessionId) break;
      const answer = await askAnswer(result.call.function.arguments, ask, out);
      if (answer === null) return 0;
      result = await send({
        session_id: sessionId,
        messages: [
          { role: 'assistant', content: null, tool_calls: [result.call] },
          { role: 'tool', tool_call_id: result.call.id, content: answer },
        ],
      });
    }
  }
  rl.close();
  return 0;
}
