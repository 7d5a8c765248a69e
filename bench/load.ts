// A closed-loop load generator: N connections each sending the next request as soon as the
// previous response was fully read, for a fixed time. wrk (Debian's package) where it is
// installed: written in C, it leaves the two cores to the servers measured, which a generator in
// Node (the fallback below) does not. BENCH_LOAD=node forces the fallback. Latencies are in
// milliseconds, kept to the microsecond (autocannon's histogram rounds to whole milliseconds, too
// coarse for a 0.5 ms budget).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';

export type LoadResult = { rps: number; p50: number; p99: number; errors: number; requests: number };

type LoadOptions = {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  durationMs: number;
};

/** wrk, where installed and not turned off. */
export const WRK =
  process.env.BENCH_LOAD === 'node' ? null : (['/usr/bin/wrk', '/usr/local/bin/wrk'].find(existsSync) ?? null);

export function load(o: LoadOptions): Promise<LoadResult> {
  return WRK ? wrkLoad(WRK, o) : nodeLoad(o);
}

/** A wrk latency figure ("812.00us", "1.20ms", "2.01s") in milliseconds. */
export function wrkMs(figure: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(figure);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

/** What `wrk --latency` printed, as a LoadResult. */
export function parseWrk(out: string): LoadResult {
  const pct = (p: string) => wrkMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const requests = Number(/^\s*(\d+) requests in/m.exec(out)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0;
  return {
    rps: Number(/^Requests\/sec:\s+([\d.]+)/m.exec(out)?.[1] ?? Number.NaN),
    p50: pct('50'),
    p99: pct('99'),
    errors: non2xx + socketErrors,
    requests: requests - non2xx,
  };
}

function wrkLoad(wrk: string, o: LoadOptions): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-wrk-'));
  const script = join(dir, 'post.lua');
  const lua = (s: string) => JSON.stringify(s); // a JSON string is a valid Lua string literal here
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      `wrk.body = ${lua(o.body)}`,
      ...Object.entries({ 'content-type': 'application/json', ...o.headers }).map(
        ([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`,
      ),
    ].join('\n'),
  );
  const seconds = Math.max(1, Math.round(o.durationMs / 1000));
  const args = ['-t1', `-c${o.connections}`, `-d${seconds}s`, '--latency', '-s', script, o.url];
  return new Promise((resolve, reject) =>
    execFile(wrk, args, (err, stdout) => {
      rmSync(dir, { recursive: true, force: true });
      if (err) return reject(err);
      resolve(parseWrk(stdout));
    }),
  );
}

async function nodeLoad(o: LoadOptions): Promise<LoadResult> {
  const u = new URL(o.url);
  const pool = new Pool(u.origin, { connections: o.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + o.durationMs;
  const headers = { 'content-type': 'application/json', ...o.headers };
  async function loop() {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: u.pathname, method: 'POST', headers, body: o.body });
        await res.body.text();
        if (res.statusCode !== 200) errors++;
        else latencies.push(performance.now() - t0);
      } catch {
        errors++;
      }
    }
  }
  const t = performance.now();
  await Promise.all(Array.from({ length: o.connections }, loop));
  const elapsed = performance.now() - t;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN;
  return {
    rps: (latencies.length / elapsed) * 1000,
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    requests: latencies.length,
  };
}
