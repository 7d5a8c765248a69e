// The four attacks of the abuse-resistance issue, each against a real gateway process on loopback
// (docs/abuse-resistance.md): a slowloris of a few thousand sockets, one key holding its maximum
// of streams, a body nested thousands deep, and a model naming a provider the operator never
// configured. Each time another key's model request and intern turn still succeed, or the
// refusal is the documented status and body. Bounded in count (by the open-file limit) and time.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { freePort, gatewayProcesses, type GatewayProcess } from './helpers/gateway-process.ts';
import { waitFor, waitForValue } from './helpers/wait.ts';
import {
  callProcess,
  parseSse,
  readChat,
  readUntil,
  rest,
  runningInternOn,
  type ChatResult,
} from './helpers/interns.ts';

const redisUrl = process.env.REDIS_URL;
const PER_KEY_MODEL = 4;
const PER_ACCOUNT_MODEL = 8;
const PER_KEY_STREAMS = 1;
const LIMITS = {
  COHORT_MAX_MODEL_REQUESTS_PER_KEY: String(PER_KEY_MODEL),
  COHORT_MAX_MODEL_REQUESTS_PER_ACCOUNT: String(PER_ACCOUNT_MODEL),
  COHORT_MAX_INTERN_STREAMS_PER_KEY: String(PER_KEY_STREAMS),
  COHORT_MAX_INTERN_STREAMS_PER_ACCOUNT: '4',
};
/** The gateway's default cap on connections from one address (config.ts). */
const DEFAULT_PER_ADDRESS = 256;
const openFiles = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
/** A few thousand slow sockets, as many as this process's open-file limit allows beside the rest of the test. */
const SLOW_SOCKETS = Math.max(0, Math.min(3000, openFiles - 1000));

const rateLimited = (message: string) => ({
  error: { code: 429, message, metadata: { reason: 'rate_limited', retryable: true } },
});
const modelsFull = rateLimited(
  `too many concurrent model requests for this API key (at most ${PER_KEY_MODEL}); retry when one ends`,
);
const streamsFull = rateLimited(
  `too many concurrent intern chat streams for this API key (at most ${PER_KEY_STREAMS}); retry when one ends`,
);
const tooDeep = 'invalid request parameters: body: JSON nests deeper than the limit of 64 levels';
const user = (content: string) => [{ role: 'user', content }];

function post(gw: GatewayProcess, path: string, body: unknown, key: string, signal?: AbortSignal): Promise<Response> {
  return fetch(gw.url + path, {
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A model stream held open: the script says `held`, then sleeps a minute. */
async function holdModelStream(gw: GatewayProcess, key: string) {
  const abort = new AbortController();
  const res = await post(
    gw,
    '/chat/completions',
    { model: 'local/scripted', stream: true, messages: user('/say held\n/sleep 60000') },
    key,
    abort.signal,
  );
  assert.equal(res.status, 200);
  await readUntil(res, 'held');
  return abort;
}

/** An intern stream held open, as holdModelStream. The intern's run held by an earlier test ends a
 * moment after that test's abort (the daemon cancels it): until then the hold is `409 busy`. */
async function holdInternStream(gw: GatewayProcess, internId: string, key: string) {
  const abort = new AbortController();
  const hold = () =>
    post(
      gw,
      `/interns/${internId}/chat/completions`,
      { stream: true, messages: user('/say held\n/sleep 60000') },
      key,
      abort.signal,
    );
  const res = await waitFor('the earlier run ended and the hold was taken', async () => {
    const r = await hold();
    if (r.status !== 409) return r;
    assert.equal((await r.json()).error.metadata.reason, 'busy');
    return null;
  });
  assert.equal(res.status, 200);
  await readUntil(res, 'held');
  return abort;
}

/** `n` model streams of `key` held at once, once that many of its slots are free: a slot comes back a
 * moment after its client lets go (the gateway notices the closed connection), so a try that finds
 * one still taken lets go of what it got and tries again. */
function holdAll(gw: GatewayProcess, key: string, n: number, what: string): Promise<AbortController[]> {
  return waitFor(what, async () => {
    const tries = await Promise.allSettled(Array.from({ length: n }, () => holdModelStream(gw, key)));
    const holders = tries.flatMap((t) => (t.status === 'fulfilled' ? [t.value] : []));
    if (holders.length === n) return holders;
    for (const h of holders) h.abort();
    return null;
  });
}

const contentOf = (r: ChatResult) => r.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');

/** Another key's model request and intern turn, both whole and as scripted. */
async function victimSucceeds(gw: GatewayProcess, internId: string) {
  const key = gw.keys().management_key;
  const model = await readChat(
    await post(gw, '/chat/completions', { model: 'local/scripted', messages: user('/say still served') }, key),
  );
  assert.equal(model.status, 200, model.text);
  assert.equal(model.body.choices[0].message.content, 'still served');
  const turn = await readChat(
    await post(gw, `/interns/${internId}/chat/completions`, { stream: true, messages: user('/say turn served') }, key),
  );
  assert.equal(turn.status, 200, turn.text);
  assert.equal(contentOf(turn), 'turn served');
  assert.equal(turn.done, true);
}

/** Opens one slow socket from `from`: a request line, then one header a second; records whether and how the gateway closed it. */
function slowSocket(port: number, from: string) {
  const s = {
    socket: null as unknown as Socket,
    got: '',
    closed: false,
    drip: null as NodeJS.Timeout | null,
    /** Settles once the socket is connected (the gateway's backlog holds it) or closed. */
    settled: null as unknown as Promise<unknown>,
  };
  s.socket = connect({ port, host: '127.0.0.1', localAddress: from }, () => {
    s.socket.write('POST /api/v1/chat/completions HTTP/1.1\r\nhost: x\r\n');
    s.drip = setInterval(() => s.socket.write('x-drip: 1\r\n'), 1000);
  });
  s.socket.on('data', (d: Buffer) => (s.got += d.toString()));
  s.socket.on('error', () => {});
  s.socket.on('close', () => {
    s.closed = true;
    clearInterval(s.drip!);
  });
  s.settled = Promise.race([once(s.socket, 'connect'), once(s.socket, 'close')]);
  return s;
}

describe('abuse resistance (a real gateway process)', { timeout: 180_000 }, () => {
  const pool = gatewayProcesses('cohort-abuse-');
  let gw: GatewayProcess;
  let heldIntern: string;
  let victimIntern: string;
  before(async () => {
    gw = await pool.start({ dataDir: pool.dataDir(), port: await freePort(), env: { LOG_LEVEL: 'warn', ...LIMITS } });
    [heldIntern, victimIntern] = (await Promise.all([runningInternOn(gw, 'held'), runningInternOn(gw, 'victim')])).map(
      (i) => i.id as string,
    ) as [string, string];
  });
  after(() => pool.cleanup());

  test('a body nested deeper than 64 levels is a 400 naming the limit on every route, in its error shape; 64 levels are served', async () => {
    const k = gw.keys();
    const deep = (inner: string) =>
      `{"model":"local/scripted","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"/say ok"}],"x":${inner}}`;
    const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const chat = { error: { code: 400, message: tooDeep, metadata: { reason: 'bad_request', retryable: false } } };
    for (const [path, key] of [
      ['/chat/completions', k.api_key],
      ['/messages', k.api_key],
      [`/interns/${victimIntern}/chat/completions`, k.api_key],
    ] as const) {
      const r = await readChat(await post(gw, path, deep(nested(5000)), key));
      assert.deepEqual([r.status, r.body], [400, chat], path);
    }
    const ws = await readChat(
      await post(gw, '/workspaces', `{"name":"deep","slug":"deep","description":${nested(5000)}}`, k.management_key),
    );
    assert.deepEqual([ws.status, ws.body], [400, { error: { code: 400, message: tooDeep } }]);
    // The body object, then 63 arrays: 64 levels, at the limit and served.
    const atLimit = await readChat(
      await post(gw, '/chat/completions', deep(nested(63)).replace('"stream":true', '"stream":false'), k.api_key),
    );
    assert.equal(atLimit.status, 200, atLimit.text);
    assert.equal(atLimit.body.choices[0].message.content, 'ok');
    const over = await readChat(await post(gw, '/chat/completions', deep(nested(64)), k.api_key));
    assert.deepEqual([over.status, over.body], [400, chat]);
  });

  test('a provider the operator did not configure is a 400 naming it, and nothing connects to its default address', async (t) => {
    // Ollama's built-in default is 127.0.0.1:11434: a listener there sees every attempt.
    const seen: Socket[] = [];
    const listener = createServer((s) => seen.push(s));
    const bound = await new Promise<boolean>((resolve) => {
      listener.once('error', () => resolve(false));
      listener.listen(11434, '127.0.0.1', () => resolve(true));
    });
    if (!bound) return t.skip('127.0.0.1:11434 is in use on this machine');
    try {
      const k = gw.keys();
      const notConfigured =
        'invalid request parameters: model: provider ollama is not configured on this gateway: its operator sets COHORT_PROVIDER_OLLAMA_BASE_URL or COHORT_PROVIDER_OLLAMA_API_KEY, or the workspace adds a BYOK credential for it';
      const body = {
        error: { code: 400, message: notConfigured, metadata: { reason: 'bad_request', retryable: false } },
      };
      const chat = await readChat(
        await post(gw, '/chat/completions', { model: 'ollama/llama3', messages: user('hi') }, k.api_key),
      );
      assert.deepEqual([chat.status, chat.body], [400, body]);
      const messages = await readChat(
        await post(gw, '/messages', { model: 'ollama/llama3', max_tokens: 10, messages: user('hi') }, k.api_key),
      );
      assert.deepEqual([messages.status, messages.body], [400, body]);
      // A tenant's BYOK credential does not give it the operator's loopback default either.
      const cred = await callProcess(gw, 'POST', '/byok', { provider: 'ollama', key: 'anything' });
      assert.equal(cred.status, 201, cred.text);
      const byok = await readChat(
        await post(gw, '/chat/completions', { model: 'ollama/llama3', messages: user('hi') }, k.api_key),
      );
      assert.deepEqual(
        [byok.status, byok.body],
        [
          400,
          {
            error: {
              code: 400,
              message:
                'invalid request parameters: model: provider ollama has no endpoint configured (COHORT_PROVIDER_OLLAMA_BASE_URL)',
              metadata: { reason: 'bad_request', retryable: false },
            },
          },
        ],
      );
      assert.equal((await callProcess(gw, 'DELETE', `/byok/${cred.body.data.id}`)).status, 200);
      // The built-in model is always there.
      const local = await readChat(
        await post(gw, '/chat/completions', { model: 'local/scripted', messages: user('/say local') }, k.api_key),
      );
      assert.equal(local.body.choices[0].message.content, 'local');
      // A connection the gateway made while answering is ahead of one made now in the listener's
      // accept queue: once this probe is accepted, every earlier one has been seen.
      const probe = connect(11434, '127.0.0.1');
      await once(probe, 'connect');
      const from = probe.localPort;
      await waitFor('the listener accepted the probe', () => seen.some((s) => s.remotePort === from));
      probe.destroy();
      assert.equal(seen.filter((s) => s.remotePort !== from).length, 0);
    } finally {
      for (const s of seen) s.destroy();
      listener.close();
    }
  });

  test(`during a slowloris of ${SLOW_SOCKETS} sockets from one address, another client's model request and intern turn succeed; the slow sockets get 408 within the headers timeout`, {
    skip: SLOW_SOCKETS < 500 ? `open-file limit ${openFiles} is too low` : false,
  }, async () => {
    const port = Number(new URL(gw.url).port);
    const slow: ReturnType<typeof slowSocket>[] = [];
    // In batches, each connected before the next, so the listen backlog is not what refuses them.
    for (let i = 0; i < SLOW_SOCKETS; i += 250) {
      for (let j = i; j < Math.min(SLOW_SOCKETS, i + 250); j++) slow.push(slowSocket(port, '127.0.0.2'));
      await Promise.all(slow.slice(i).map((s) => s.settled));
    }
    const started = Date.now();
    try {
      // The address's cap was taken and the rest refused as the gateway accepts them from its backlog.
      const open = () => slow.filter((s) => !s.closed).length;
      const left = await waitForValue('the address holds at most its cap', open, (n) => n <= DEFAULT_PER_ADDRESS, {
        timeoutMs: 3_000,
      });
      assert.equal(left, DEFAULT_PER_ADDRESS);
      assert.ok(
        slow.filter((s) => s.closed).every((s) => s.got === ''),
        'a refused socket gets no bytes',
      );
      await victimSucceeds(gw, victimIntern);
      assert.ok(Date.now() - started < 5_000, 'the victim was served while the slow sockets were held');
      // Each held one is answered 408 once its head is 5 s late (node checks every second).
      const held = slow.filter((s) => !s.closed);
      await Promise.all(held.map((s) => (s.closed ? null : once(s.socket, 'close'))));
      assert.ok(Date.now() - started < 9_000, `held for ${Date.now() - started} ms`);
      const timeout = JSON.stringify({ error: { code: 408, message: 'the request was not received in time' } });
      for (const s of held)
        assert.ok(s.got.startsWith('HTTP/1.1 408 Request Timeout\r\n') && s.got.endsWith(`\r\n\r\n${timeout}`), s.got);
    } finally {
      for (const s of slow) s.socket.destroy();
    }
  });

  test('one key holding its maximum of model and intern streams gets 429 with Retry-After; another key is served; then the account cap', async () => {
    const k = gw.keys();
    const holders = await Promise.all(Array.from({ length: PER_KEY_MODEL }, () => holdModelStream(gw, k.api_key)));
    const internHolder = await holdInternStream(gw, heldIntern, k.api_key);
    try {
      const more = await post(gw, '/chat/completions', { model: 'local/scripted', messages: user('hi') }, k.api_key);
      assert.equal(more.status, 429);
      assert.equal(more.headers.get('retry-after'), '1');
      assert.deepEqual(await more.json(), modelsFull);
      const moreAnthropic = await post(
        gw,
        '/messages',
        { model: 'local/scripted', max_tokens: 10, messages: user('hi') },
        k.api_key,
      );
      assert.deepEqual(
        [moreAnthropic.status, moreAnthropic.headers.get('retry-after'), await moreAnthropic.json()],
        [429, '1', modelsFull],
      );
      const moreTurn = await post(
        gw,
        `/interns/${victimIntern}/chat/completions`,
        { stream: true, messages: user('hi') },
        k.api_key,
      );
      assert.deepEqual(
        [moreTurn.status, moreTurn.headers.get('retry-after'), await moreTurn.json()],
        [429, '1', streamsFull],
      );

      await victimSucceeds(gw, victimIntern);

      // The account: the api key's 4, the held turn's own model request (the intern's key) and 3 of the
      // management key's make 8 (once the victim's requests have given theirs back).
      const mine = await holdAll(gw, k.management_key, 3, 'three streams of the management key are held');
      const over = await post(
        gw,
        '/chat/completions',
        { model: 'local/scripted', messages: user('hi') },
        k.management_key,
      );
      assert.deepEqual(
        [over.status, over.headers.get('retry-after'), await over.json()],
        [
          429,
          '1',
          rateLimited(
            `too many concurrent model requests for this account (at most ${PER_ACCOUNT_MODEL}); retry when one ends`,
          ),
        ],
      );
      for (const a of mine) a.abort();
    } finally {
      for (const a of holders) a.abort();
      internHolder.abort();
    }
  });

  test('slots are given back on every ending: finish, refusal, client abort', async () => {
    const key = gw.keys().api_key;
    /** The key's whole allowance can be held again, at once (the slots of what ended are free). */
    const refill = () => holdAll(gw, key, PER_KEY_MODEL, "the key's whole allowance is held again");
    // Finished: streamed and not.
    const done = await Promise.all(
      Array.from({ length: PER_KEY_MODEL }, (_, i) =>
        post(
          gw,
          '/chat/completions',
          { model: 'local/scripted', stream: i % 2 === 0, messages: user('/sleep 200\n/say done') },
          key,
        ).then(readChat),
      ),
    );
    assert.deepEqual(
      done.map((r) => r.status),
      [200, 200, 200, 200],
    );
    for (const h of await refill()) h.abort();
    // Refused by the provider (the scripted model failing as a provider answering 400 would).
    // The refill's holders were just aborted: on a busy machine their slots come back a moment later.
    const failOnce = () =>
      waitForValue(
        'a slot of the key is free for the request',
        () =>
          post(gw, '/chat/completions', { model: 'local/scripted', messages: user('/fail 400') }, key).then(readChat),
        (r) => r.status !== 429,
      );
    const refused = await Promise.all(Array.from({ length: PER_KEY_MODEL }, failOnce));
    for (const r of refused)
      assert.deepEqual(
        [r.status, r.body.error.code, r.body.error.metadata],
        [400, 400, { reason: 'bad_request', retryable: false }],
      );
    // Aborted by the client mid-stream (the refill's own holders, aborted above and here).
    for (const h of await refill()) h.abort();
    for (const h of await refill()) h.abort();
    // An intern stream the client abandoned frees its slot: the key may open another at once.
    const abandoned = await holdInternStream(gw, heldIntern, key);
    abandoned.abort();
    const turn = await waitForValue(
      "the abandoned stream's slot is given back",
      async () =>
        readChat(
          await post(
            gw,
            `/interns/${victimIntern}/chat/completions`,
            { stream: true, messages: user('/say again') },
            key,
          ),
        ),
      (r) => r.status === 200,
    );
    assert.equal(turn.status, 200, turn.text);
    assert.equal(contentOf(turn), 'again');
  });

  test('a gateway that shuts down with streams open gives their slots back to Redis', {
    skip: redisUrl ? false : 'REDIS_URL is not set',
  }, async () => {
    const g = await pool.start({
      dataDir: pool.dataDir(),
      port: await freePort(),
      env: { LOG_LEVEL: 'warn', REDIS_URL: redisUrl!, COHORT_SHUTDOWN_GRACE_MS: '200', ...LIMITS },
    });
    const { Redis } = await import('ioredis');
    const redis = new Redis(redisUrl!);
    try {
      const account = `cohort:slots:model:account:${g.keys().org_id}`;
      const open = await Promise.all(
        [1, 2].map(async () => {
          const res = await post(
            g,
            '/chat/completions',
            { model: 'local/scripted', stream: true, messages: user('/say held\n/sleep 60000') },
            g.keys().api_key,
          );
          return readUntil(res, 'held');
        }),
      );
      assert.equal(await redis.zcard(account), 2);
      const exited = once(g.child, 'exit');
      g.child.kill('SIGTERM');
      // Each stream is ended the shutdown's way (its error chunk, then [DONE]) and its slot given back.
      for (const text of await Promise.all(open.map((o) => rest(o.reader, o.seen)))) {
        const sse = parseSse(text);
        assert.deepEqual(sse.chunks.at(-1).error, {
          code: 502,
          message: 'the gateway is shutting down',
          metadata: { reason: 'stream_severed', retryable: true },
        });
        assert.equal(sse.done, true);
      }
      assert.deepEqual(await exited, [0, null]);
      assert.equal(await redis.zcard(account), 0);
    } finally {
      redis.disconnect();
    }
  });
});
