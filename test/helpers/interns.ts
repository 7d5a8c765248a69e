// End-to-end fixture for intern tests: a real gateway, real daemon processes started by the local
// provisioner, the built-in agent, and the scripted model served by the gateway's own inference
// route (the agent calls it with the intern's key). close() kills every daemon it started and
// removes every directory.
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { acceptsConnections } from '../../src/gateway/interns/intern-socket.ts';
import { startTestGateway, type TestGateway } from './gateway.ts';
import { interns } from '../../src/gateway/store/schema-interns.ts';
import { getInternById, secretBinding } from '../../src/gateway/interns/interns.ts';
import { daemonPaths, type StatusResponse } from '../../src/shared/daemon-protocol.ts';
import { InternChunk } from '../../src/gateway/interns/chat.schemas.ts';
import type { GatewayProcess } from './gateway-process.ts';
import { SseDecoder } from '../../src/shared/sse/read.ts';
import { callOf, text as chatText, tool as chatTool, user as chatUser } from './chat.ts';

export type ChatResult = { status: number; headers: Headers; body: any; chunks: any[]; done: boolean; text: string };

export type InternFixture = {
  gw: TestGateway;
  /** Creates, provisions and waits for a running intern; returns its id. */
  intern(name: string, body?: Record<string, unknown>): Promise<string>;
  chat(id: string, body: unknown, opts?: { key?: string; signal?: AbortSignal; raw?: string }): Promise<ChatResult>;
  /** Opens a chat request and returns the response without reading its body. */
  open(id: string, body: unknown, opts?: { key?: string; signal?: AbortSignal }): Promise<Response>;
  killDaemon(id: string): Promise<void>;
  close(): Promise<void>;
};

/** Parses an SSE body: data payloads (JSON), whether `[DONE]` arrived, and the raw text. */
export function parseSse(text: string): { chunks: any[]; done: boolean } {
  const chunks: any[] = [];
  let done = false;
  new SseDecoder((data) => {
    if (data === '[DONE]') done = true;
    else chunks.push(JSON.parse(data));
  }).feed(text);
  return { chunks, done };
}

export async function readChat(res: Response): Promise<ChatResult> {
  const text = await res.text();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, body, chunks: [], done: false, text };
  }
  return { status: res.status, headers: res.headers, body: null, text, ...parseSse(text) };
}

/** A request to a gateway process (./gateway-process.ts), with its management key unless `key` is given. */
export async function callProcess(
  gw: GatewayProcess,
  method: string,
  path: string,
  body?: unknown,
  key = gw.keys().management_key,
): Promise<ChatResult> {
  const res = await fetch(gw.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return readChat(res);
}

/** Creates and provisions an intern on a gateway process and waits (up to 30 s) until it runs; returns its record. */
export async function runningInternOn(gw: GatewayProcess, name: string): Promise<any> {
  const created = await callProcess(gw, 'POST', '/interns', { name, provision: true });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id as string;
  for (let i = 0; i < 300; i++) {
    const s = (await callProcess(gw, 'GET', `/interns/${id}`)).body;
    if (s.status === 'running') return s;
    if (s.status === 'failed') throw new Error(`intern failed: ${s.last_failure_message}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('intern did not start within 30 s');
}

export function killGroup(pid: number | null | undefined) {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {}
}

/** Options as startTestGateway's: `dataDir` (+ `onDisk`) or `pgSchema` for a store that exists, with the `keys` that seeded it; `logTo` for its log lines. */
export async function startInternFixture(
  opts: Parameters<typeof startTestGateway>[0] & {} = {},
): Promise<InternFixture> {
  const gw = await startTestGateway(opts);
  const open: InternFixture['open'] = (id, body, o = {}) =>
    fetch(`${gw.url}/interns/${id}/chat/completions`, {
      method: 'POST',
      signal: o.signal,
      headers: { authorization: `Bearer ${o.key ?? gw.keys.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return {
    gw,
    async intern(name, body = {}) {
      const res = await gw.call('POST', '/interns', { body: { name, provision: true, ...body } });
      if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
      await gw.ctx.interns.idle();
      const got = await gw.call('GET', `/interns/${res.body.id}`);
      if (got.body.status !== 'running') throw new Error(`intern not running: ${JSON.stringify(got.body)}`);
      return res.body.id as string;
    },
    open,
    async chat(id, body, o = {}) {
      return readChat(await open(id, body, o));
    },
    async killDaemon(id) {
      const row = await getInternById(gw.ctx.store.db, id);
      killGroup(row?.daemonPid);
      // Its sandbox dies a moment after the launcher: wait until nothing accepts on its socket any more.
      const address = row?.hostname;
      for (let i = 0; i < 100 && address && (await daemonAccepts(address)); i++)
        await new Promise((r) => setTimeout(r, 20));
    },
    async close() {
      const rows = await gw.ctx.store.db.select({ pid: interns.daemonPid }).from(interns);
      for (const r of rows) killGroup(r.pid);
      await gw.close();
    },
  };
}

/** A chat once the intern is free: a run its client abandoned is cancelled, and ends a moment
 * later (on a loaded machine, later than a fixed wait), answering `409 busy` until then. Whoever
 * uses it makes the abandoned run outlast `withinMs` by far, so that only its cancel frees the intern. */
export async function chatOnceFree(f: InternFixture, id: string, body: unknown, withinMs = 5_000): Promise<ChatResult> {
  const until = Date.now() + withinMs;
  for (;;) {
    const r = await f.chat(id, body);
    if (r.status !== 409 || r.body?.error?.metadata?.reason !== 'busy' || Date.now() > until) return r;
    await new Promise((w) => setTimeout(w, 100));
  }
}

/** Reads a stream until `text` has arrived, failing if it ends first; returns the reader and what was read. */
export async function readUntil(res: Response, text: string) {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let seen = '';
  while (!seen.includes(text)) {
    const { value, done } = await reader.read();
    assert.ok(!done, `stream ended before ${JSON.stringify(text)}: ${seen}`);
    seen += dec.decode(value, { stream: true });
  }
  return { reader, seen };
}
/** Reads a stream until its first content chunk. */
export const untilContent = (res: Response) => readUntil(res, '"content"');
/** Reads the rest of a stream after `seen`. */
export async function rest(reader: ReadableStreamDefaultReader<Uint8Array>, seen: string) {
  let t = seen;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return t;
    t += new TextDecoder().decode(value);
  }
}

/** A complete chat stream: 200, every chunk valid, one id, role first, empty final choices, [DONE] last. */
export function assertChatStream(r: Pick<ChatResult, 'status' | 'headers' | 'text' | 'chunks' | 'done'>) {
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type')!, /^text\/event-stream/);
  assert.equal(r.done, true);
  assert.ok(r.text.trimEnd().endsWith('data: [DONE]'));
  for (const c of r.chunks) InternChunk.parse(c);
  assert.equal(new Set(r.chunks.map((c) => c.id)).size, 1);
  assert.deepEqual(r.chunks[0].choices[0].delta, { role: 'assistant' });
  assert.deepEqual(r.chunks.at(-1).choices, []);
}

/** A request straight to a daemon at its recorded address (`unix:/…` in its sandbox, or `http://…`); rejects when nothing answers there. */
export async function daemonRequest(
  address: string,
  path: string,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  const unix = address.startsWith('unix:');
  const dispatcher = unix ? new Agent({ connect: { socketPath: address.slice(5) } }) : undefined;
  try {
    const res = await request((unix ? 'http://localhost' : address) + path, { ...init, dispatcher });
    return { status: res.statusCode, text: await res.body.text() };
  } finally {
    await dispatcher?.close();
  }
}

/** Whether something still accepts connections at a daemon's address (a dying daemon may accept, then reset). */
const daemonAccepts = (address: string) =>
  acceptsConnections(
    address.startsWith('unix:')
      ? { path: address.slice(5) }
      : { host: new URL(address).hostname, port: Number(new URL(address).port) },
  );

/** Whether a daemon answers its health check at an address. */
export const daemonAnswers = (address: string) =>
  daemonRequest(address, '/v1/health').then(
    (r) => r.status === 200,
    () => false,
  );

export type ApprovalMode = 'self-drive' | 'manual';

/** Runs `cmd` in intern `id`'s shell through the public chat API (the scripted model's /shell) and
 * returns what the shell printed; in manual mode the permission is allowed once, and the command
 * runs in the inner sandbox. */
export async function shellIn(
  f: InternFixture,
  id: string,
  cmd: string,
  o: { mode?: ApprovalMode; key?: string; session?: string } = {},
): Promise<string> {
  const mode = o.mode ?? 'self-drive';
  const extra = { approval_mode: mode, ...(o.session ? { session_id: o.session } : {}) };
  const first = await f.chat(id, chatUser(`/shell ${cmd}`, extra), { key: o.key });
  assert.equal(first.status, 200, first.text);
  let done = first;
  if (mode === 'manual') {
    const call = callOf(first);
    assert.ok(call, `manual mode asks before the shell runs: ${first.text}`);
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual([args.input.command, args.sandbox], [cmd, 'inner']);
    done = await f.chat(id, chatTool(first.chunks.at(-1).session_id, call.id, 'allow_once'), { key: o.key });
    assert.equal(done.status, 200, done.text);
  }
  const out = chatText(done);
  assert.match(out, /^shell: /, out);
  return out.slice('shell: '.length);
}

/** shellIn's output without the shell's closing `[exit N]` line. */
export const shellOut = async (...a: Parameters<typeof shellIn>) =>
  (await shellIn(...a)).replace(/\n?\[exit \d+\]$/, '');

/** From inside intern `id`, in its repository at /intern/work/<folder>: `file` and the remote's
 * address, then how many files, process environments and process arguments hold `secret`, then a
 * commit of a change to `file`. The secret is looked for without being sent whole (the chat itself
 * is on the intern's disk): its two halves are joined into a pattern file in the intern's /tmp. */
export async function secretSeenInside(
  f: InternFixture,
  id: string,
  o: { secret: string; folder: string; file: string; message: string },
): Promise<{ seen: string; lines: string[]; commit: string }> {
  const half = Math.floor(o.secret.length / 2);
  const seen = await shellOut(
    f,
    id,
    [
      `printf '%s%s' '${o.secret.slice(0, half)}' '${o.secret.slice(half)}' > /tmp/p`,
      `cd /intern/work/${o.folder} && cat ${o.file} && git remote get-url origin`,
      'grep -rlaF -f /tmp/p /intern 2>/dev/null | wc -l',
      'cat /proc/*/environ 2>/dev/null | grep -caF -f /tmp/p',
      'ps -eo args | grep -caF -f /tmp/p',
      `echo change >> ${o.file} && git -c user.name=i -c user.email=i@example.com commit -qam "${o.message}" && git rev-parse HEAD`,
    ].join('; '),
  );
  const lines = seen.split('\n');
  return { seen, lines, commit: lines.at(-1)! };
}

/** A push of repository `repoId` to a branch outside the credential's scope (`agent/`) is refused
 * with the documented message; then `branch` (inside it) is pushed and its answer returned. */
export async function pushInScope(f: InternFixture, id: string, repoId: string, branch: string) {
  const outside = await f.gw.call('POST', `/interns/${id}/repositories/${repoId}/push`, {
    body: { branch: 'cohort/x' },
    key: f.gw.keys.api_key,
  });
  assert.deepEqual(
    [outside.status, outside.body.error.message],
    [
      400,
      'invalid request parameters: branch: "cohort/x" is outside the credential\'s scope: pushes create branches under agent/',
    ],
  );
  const pushed = await f.gw.call('POST', `/interns/${id}/repositories/${repoId}/push`, {
    body: { branch },
    key: f.gw.keys.api_key,
  });
  assert.equal(pushed.status, 200, JSON.stringify(pushed.body));
  return pushed;
}

/** What an intern's daemon says of its runs and turn lock (its status route), asked with the intern's daemon secret. */
export async function daemonStatus(f: InternFixture, id: string): Promise<StatusResponse> {
  const row = (await getInternById(f.gw.ctx.store.db, id))!;
  const secret = f.gw.ctx.sealer.open(row.sealedSecret!, secretBinding.daemon(id));
  const res = await daemonRequest(row.hostname!, daemonPaths.status, {
    headers: { authorization: `Bearer ${secret}` },
  });
  assert.equal(res.status, 200);
  return JSON.parse(res.text) as StatusResponse;
}
