// Provider egress through an operator's forward proxy: a gateway process started with
// HTTP_PROXY/HTTPS_PROXY sends model requests to a configured provider (the fake upstream on
// loopback) through a real CONNECT proxy written here, which counts its tunnels; with NO_PROXY
// naming the upstream it goes direct. Streams work through the tunnel, and a client that goes
// away still closes the upstream request.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { freePort, gatewayProcesses, type GatewayProcess } from './helpers/gateway-process.ts';
import { startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { waitFor } from './helpers/wait.ts';

type Proxy = { url: string; tunnels: string[]; refused: string[]; close(): Promise<void> };

/** A forward proxy that tunnels CONNECT requests (what undici sends for http and https targets
 * alike) and refuses any other request with 501, recording both. */
async function startProxy(): Promise<Proxy> {
  const tunnels: string[] = [];
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    refused.push(`${req.method} ${req.url}`);
    res.writeHead(501).end();
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    tunnels.push(req.url!);
    const [host, port] = [
      req.url!.slice(0, req.url!.lastIndexOf(':')),
      Number(req.url!.slice(req.url!.lastIndexOf(':') + 1)),
    ];
    const upstream = connect({ host, port }, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(client).add(upstream);
    // Either side closing closes the other, as a proxy's tunnel does.
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const chat = (gw: GatewayProcess, body: unknown, signal?: AbortSignal) =>
  fetch(`${gw.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.keys().api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });

const user = (content: string) => [{ role: 'user', content }];

describe('provider egress through an HTTP proxy', () => {
  const pool = gatewayProcesses('cohort-egress-proxy-');
  let up: FakeUpstream;
  let proxy: Proxy;
  let upHost: string;
  const gateway = async (env: Record<string, string>) =>
    pool.start({
      dataDir: pool.dataDir(),
      port: await freePort(),
      env: {
        COHORT_PROVIDER_OPENAI_BASE_URL: up.url,
        COHORT_PROVIDER_OPENAI_API_KEY: 'sk-egress-shared',
        HTTP_PROXY: proxy.url,
        HTTPS_PROXY: proxy.url,
        ...env,
      },
    });

  before(async () => {
    up = await startFakeUpstream();
    proxy = await startProxy();
    upHost = new URL(up.url).host;
  });
  after(async () => {
    await pool.cleanup();
    await proxy.close();
    await up.close();
  });

  test('a model request, streamed or not, goes through the proxy; a client that goes away closes the upstream request', async () => {
    const gw = await gateway({});
    const res = await chat(gw, { model: 'openai/gpt-4o', messages: user('/say through the proxy') });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(
      [body.model, body.choices[0].message, body.choices[0].finish_reason],
      ['openai/gpt-4o', { role: 'assistant', content: 'through the proxy' }, 'stop'],
    );
    assert.deepEqual([up.received.at(-1)!.key, up.received.at(-1)!.model], ['sk-egress-shared', 'gpt-4o']);
    assert.deepEqual(proxy.tunnels, [upHost]);

    const streamed = await chat(gw, { model: 'openai/gpt-4o', stream: true, messages: user('/say streamed') });
    assert.equal(streamed.status, 200);
    const text = await streamed.text();
    const frames = text.split('\n\n').filter(Boolean);
    assert.equal(frames.at(-1), 'data: [DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.replace(/^data: /, '')));
    assert.deepEqual(
      chunks.map((c) => [c.choices[0]?.delta ?? null, c.choices[0]?.finish_reason ?? null, c.usage ?? null]),
      [
        [{ role: 'assistant', content: '' }, null, null],
        [{ content: 'streamed' }, null, null],
        [
          {},
          'stop',
          {
            prompt_tokens: 2,
            completion_tokens: 1,
            total_tokens: 3,
            prompt_tokens_details: { cached_tokens: 0 },
            cost: 0.000015,
            is_byok: false,
          },
        ],
      ],
    );

    const from = up.received.length;
    const ctl = new AbortController();
    const open = await chat(
      gw,
      {
        model: 'openai/gpt-4o',
        stream: true,
        messages: user('/say first\n/sleep 200\n/sleep 200\n/sleep 200\n/sleep 200\n/say never'),
      },
      ctl.signal,
    );
    await open.body!.getReader().read();
    ctl.abort();
    await waitFor('the provider saw the request aborted', () => up.received[from]?.aborted);
    assert.equal(up.received[from]!.aborted, true);
    // Every connection to the provider was a tunnel through the proxy (kept alive and reused), and nothing else was asked of it.
    assert.ok(proxy.tunnels.length >= 1 && proxy.tunnels.every((t) => t === upHost), proxy.tunnels.join());
    assert.deepEqual(proxy.refused, []);
    // Ended here, so nothing it does later (a pooled connection's retry) is counted against the next test.
    await gw.kill('SIGTERM');
  });

  test('with NO_PROXY naming the provider, the request goes direct', async () => {
    const tunnelsBefore = proxy.tunnels.length;
    const gw = await gateway({ NO_PROXY: new URL(up.url).hostname });
    const res = await chat(gw, { model: 'openai/gpt-4o', messages: user('/say direct') });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).choices[0].message.content, 'direct');
    assert.equal(up.received.at(-1)!.key, 'sk-egress-shared');
    assert.equal(proxy.tunnels.length, tunnelsBefore);
    assert.deepEqual(proxy.refused, []);
  });
});
