// A closed-loop load generator: N connections each sending the next request as soon as the
// previous response was fully read, for a fixed time. Latencies are kept in microseconds
// (autocannon's histogram rounds to whole milliseconds, too coarse for a 0.5 ms budget).
import { Pool } from 'undici';

export type LoadResult = { rps: number; p50: number; p99: number; errors: number };

export async function load(o: {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  durationMs: number;
}): Promise<LoadResult> {
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
  return { rps: (latencies.length / elapsed) * 1000, p50: pct(0.5), p99: pct(0.99), errors };
}
