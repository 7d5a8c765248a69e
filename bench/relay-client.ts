// `npm run bench:relay`: the intern relay's HTTP client, side by side (issue 33's item 3). Three
// relays, each a child process with the same node:http server and the same work per stream (the
// daemon's SSE read by src/shared/http/body.ts's Body and written on as `data:` frames, as the
// relay does), differing only in the client that holds the daemon connection:
//   raw     node:http's http.request with a keep-alive Agent (the Node floor)
//   h1      cohort's HTTP/1.1 client (src/shared/http/h1.ts), as src/gateway/interns/daemon-client.ts uses it
//   undici  an undici Pool, dispatch() through src/gateway/inference/providers/http.ts's own handler feeding the Body
// The daemon is a stand-in in its own process on a Unix socket. Measured, per run:
//   idle    N streams opened (each answers a head and one event, then stays open), then the
//           relay's RSS and heap after two GCs, less the same reading before the streams
//   chunks  S streams at full speed for a few seconds: chunks relayed per second (each 120 bytes)
// Runs are interleaved (the order rotates each round); medians. Env: RELAY_STREAMS (10000, or as
// many as the open-file limit allows: a relay holds two descriptors a stream, and where the hard
// limit is 20,000 that is 9,900), RELAY_RUNS (3), RELAY_FAST_STREAMS (4), RELAY_FAST_MS (3000).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { Body, type Upstream } from '../src/shared/http/body.ts';
import { H1Client } from '../src/shared/http/h1.ts';
import { Cancel } from '../src/shared/http/cancel.ts';
import { dispatchPost } from '../src/gateway/inference/providers/http.ts';

const SELF = fileURLToPath(import.meta.url);
const MODES = ['raw', 'h1', 'undici'] as const;
type Mode = (typeof MODES)[number];
/** One event as the stand-in daemon sends it: 120 bytes on the wire. */
const EVENT = `data: {"type":"chunk","text":"${'x'.repeat(120 - 34)}"}\n\n`;
if (EVENT.length !== 120) throw new Error(`event is ${EVENT.length} bytes`);
const FIRST = 'data: {"type":"run"}\n\n';

// ---------------------------------------------------------------- the stand-in daemon
function daemon(sock: string) {
  const held: http.ServerResponse[] = [];
  http
    .createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (req.url === '/fast') {
        // As fast as the relay takes them: 64 events a write, on each drain.
        const burst = EVENT.repeat(64);
        const pump = () => {
          while (!res.destroyed && res.write(burst));
          if (!res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => res.removeAllListeners('drain'));
        pump();
        return;
      }
      res.write(FIRST);
      held.push(res);
    })
    .listen(sock, () => process.send!('ready'));
}

// ---------------------------------------------------------------- the relay
/** Opens the daemon stream with the mode's client; the Body is what the relay reads. */
type Open = (path: string) => { response: Promise<Upstream>; cancel(): void };

function rawOpener(sock: string): Open {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  return (path) => {
    let request: http.ClientRequest;
    const response = new Promise<Upstream>((resolve, reject) => {
      request = http.request({
        socketPath: sock,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      });
      request.on('error', reject);
      request.on('response', (r) => {
        const body = new Body({ pause: () => r.pause(), resume: () => r.resume(), abort: (e) => r.destroy(e) });
        body.statusCode = r.statusCode!;
        body.headers = r.headers;
        r.on('data', (c: Buffer) => {
          body.data(c);
          body.flush();
        });
        r.on('end', () => body.end());
        r.on('error', (e) => body.error(e));
        resolve(body);
      });
      request.end('{}');
    });
    return { response, cancel: () => request.destroy() };
  };
}

function h1Opener(sock: string): Open {
  const client = new H1Client({ connectTimeoutMs: 5_000 });
  return (path) =>
    client.start(
      { base: `unix:${sock}`, path, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
      (e) => e,
    );
}

function undiciOpener(sock: string): Open {
  const pool = new Pool('http://localhost', {
    socketPath: sock,
    connections: null,
    headersTimeout: 0,
    bodyTimeout: 0,
    connectTimeout: 5_000,
  });
  return (path) => {
    const cancel = new Cancel();
    const response = dispatchPost(pool, { base: 'http://localhost', path, headers: {}, body: '{}', cancel });
    return { response, cancel: () => cancel.cancel() };
  };
}

function relay(mode: Mode, sock: string) {
  const open = { raw: rawOpener, h1: h1Opener, undici: undiciOpener }[mode](sock);
  const server = http.createServer((req, res) => {
    req.resume();
    const call = open(req.url === '/fast' ? '/fast' : '/turns');
    res.on('close', () => call.cancel());
    call.response.then(
      (up) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const feed = up.events((d) => d);
        feed.subscribe({
          batch(items) {
            let out = '';
            for (const d of items) out += `data: ${d}\n\n`;
            if (!res.write(out)) {
              feed.pause();
              res.once('drain', () => feed.resume());
            }
          },
          end: () => res.end(),
          error: () => res.destroy(),
        });
      },
      () => res.destroy(),
    );
  });
  server.keepAliveTimeout = 0;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
  process.on('message', (m) => {
    if (m !== 'measure') return;
    globalThis.gc!();
    globalThis.gc!();
    const u = process.memoryUsage();
    process.send!({ rss: u.rss, heap: u.heapUsed, external: u.external });
  });
}

// ---------------------------------------------------------------- the driver
const child = (args: string[]): ChildProcess => {
  const argv = [process.execPath, '--expose-gc', '--import', 'tsx', SELF, ...args];
  // Each relay and the daemon hold one descriptor per stream and more; root may raise the hard limit.
  return spawn('/bin/sh', ['-c', 'ulimit -n 65536 2>/dev/null; exec "$@"', 'sh', ...argv], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
};
const message = <T>(c: ChildProcess): Promise<T> =>
  new Promise((resolve, reject) => {
    c.once('message', (m) => resolve(m as T));
    c.once('exit', (code) => reject(new Error(`child exited (${code})`)));
  });

/** N streams opened to the relay, resolved once each has its first event. */
async function openIdle(port: number, n: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  let pending = 0;
  const BATCH = 200;
  for (let i = 0; i < n; i += BATCH) {
    const wave = Math.min(BATCH, n - i);
    pending = wave;
    await new Promise<void>((resolve, reject) => {
      const stuck = setTimeout(
        () => reject(new Error(`streams ${i}–${i + wave} did not open within 60 s (open-file limit?)`)),
        60_000,
      );
      for (let j = 0; j < wave; j++) {
        const s = connect(port, '127.0.0.1');
        sockets.push(s);
        let seen = '';
        const onData = (d: Buffer) => {
          seen += d.toString();
          if (seen.includes('"run"')) {
            s.off('data', onData);
            s.on('data', () => {});
            if (--pending === 0) {
              clearTimeout(stuck);
              resolve();
            }
          }
        };
        s.on('data', onData);
        s.on('error', reject);
        s.write('GET /turns HTTP/1.1\r\nhost: relay\r\n\r\n');
      }
    });
  }
  return sockets;
}

async function closeAll(sockets: Socket[]) {
  await Promise.all(
    sockets.map(
      (s) =>
        new Promise<void>((r) => {
          if (s.destroyed) return r();
          s.once('close', () => r());
          s.destroy();
        }),
    ),
  );
}

/** Chunks per second through `streams` streams at full speed for `ms`. */
async function chunksPerSecond(port: number, streams: number, ms: number): Promise<number> {
  let bytes = 0;
  let counting = false;
  const sockets: Socket[] = [];
  let flowing = 0;
  let allFlowing: () => void;
  const started = new Promise<void>((r) => (allFlowing = r));
  for (let i = 0; i < streams; i++) {
    const s = connect(port, '127.0.0.1');
    let first = true;
    s.on('data', (d: Buffer) => {
      if (counting) bytes += d.length;
      if (first && (first = false) === false && ++flowing === streams) allFlowing();
    });
    s.on('error', () => {});
    s.write('GET /fast HTTP/1.1\r\nhost: relay\r\n\r\n');
    sockets.push(s);
  }
  await started;
  await new Promise((r) => setTimeout(r, 1_000)); // warm-up: JIT and socket buffers, not counted
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  counting = false;
  const secs = (performance.now() - t0) / 1000;
  await closeAll(sockets);
  // Each relayed event is 120 bytes (chunked framing adds a few bytes per write, the same for all three).
  return bytes / EVENT.length / secs;
}

type Reading = { rss: number; heap: number; external: number };

async function run(mode: Mode, sock: string, n: number) {
  // Throughput in a relay of its own: one that just closed thousands of streams is still busy.
  const f = child(['relay', mode, sock]);
  const fastPort = (await message<{ port: number }>(f)).port;
  const fast = await chunksPerSecond(
    fastPort,
    Number(process.env.RELAY_FAST_STREAMS ?? 4),
    Number(process.env.RELAY_FAST_MS ?? 3_000),
  );
  f.kill('SIGKILL');
  await new Promise((r) => f.once('exit', r));

  const c = child(['relay', mode, sock]);
  const { port } = await message<{ port: number }>(c);
  const measure = () => {
    const m = message<Reading>(c);
    c.send('measure');
    return m;
  };
  await closeAll(await openIdle(port, 10)); // warm-up
  const before = await measure();
  const sockets = await openIdle(port, n);
  await new Promise((r) => setTimeout(r, 1_000)); // idle
  const idle = await measure();
  c.kill('SIGKILL');
  await closeAll(sockets);
  await new Promise((r) => c.once('exit', r));
  return {
    rssMB: (idle.rss - before.rss) / 2 ** 20,
    heapMB: (idle.heap - before.heap) / 2 ** 20,
    perStreamKB: (idle.rss - before.rss) / n / 1024,
    chunksPerS: fast,
  };
}

async function main() {
  const raised = spawnSync('/bin/sh', ['-c', 'ulimit -n 65536 2>/dev/null; ulimit -n'], { encoding: 'utf8' });
  const limit = Number(raised.stdout.trim()) || 1024;
  const n = Number(process.env.RELAY_STREAMS ?? Math.min(10_000, Math.floor((limit - 200) / 200) * 100));
  const runs = Number(process.env.RELAY_RUNS ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-'));
  const sock = join(dir, 'daemon.sock');
  const d = child(['daemon', sock]);
  await message(d);
  const load = spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
  console.log(`# ${n} idle streams, ${runs} runs; the relays' ulimit -n ${limit}; ${load}`);
  const results: Record<Mode, Awaited<ReturnType<typeof run>>[]> = { raw: [], h1: [], undici: [] };
  try {
    for (let r = 0; r < runs; r++) {
      const order = MODES.map((_, i) => MODES[(i + r) % MODES.length]!);
      for (const mode of order) {
        const res = await run(mode, sock, n);
        results[mode].push(res);
        console.log(
          `run ${r + 1} ${mode}: +${res.rssMB.toFixed(1)} MB RSS (${res.perStreamKB.toFixed(2)} KB/stream), +${res.heapMB.toFixed(1)} MB heap, ${Math.round(res.chunksPerS)} chunks/s`,
        );
      }
    }
  } finally {
    d.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const m = (mode: Mode, k: keyof Awaited<ReturnType<typeof run>>) => median(results[mode].map((x) => x[k]));
  console.log(
    `\n| client | RSS for ${n} idle streams, MB | KB per stream | heap, MB | chunks/s (${process.env.RELAY_FAST_STREAMS ?? 4} streams) | memory ÷ raw | chunks ÷ raw |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const mode of MODES)
    console.log(
      `| ${mode} | ${m(mode, 'rssMB').toFixed(1)} | ${m(mode, 'perStreamKB').toFixed(2)} | ${m(mode, 'heapMB').toFixed(1)} | ${Math.round(m(mode, 'chunksPerS'))} | ${(m(mode, 'rssMB') / m('raw', 'rssMB')).toFixed(2)} | ${(m(mode, 'chunksPerS') / m('raw', 'chunksPerS')).toFixed(2)} |`,
    );
}

const [role, a, b] = process.argv.slice(2);
if (role === 'daemon') daemon(a!);
else if (role === 'relay') relay(a as Mode, b!);
else await main();
