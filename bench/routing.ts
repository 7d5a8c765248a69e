// `npm run bench:routing`: the CPU a model request's routing costs in the gateway, without HTTP or
// the upstream: prepare() (workspace, preset, model, endpoints, credentials, preferences, prices,
// endpoint stats, session pin) called in a loop in this process on the bench's two-endpoint model
// (bench/inference.ts), plain and with a latency sort and a session. Prints µs of CPU per call,
// the median of BENCH_REPEAT rounds of BENCH_CALLS calls. To compare builds, run it in each tree
// by turns (docs/performance-log.md). It runs the sources through tsx, which names every closure
// as it is made (a call each), so its figures are above the built gateway's. The answer's share
// (recording the endpoint's measurements, which the next request reads) is measured apart on the
// endpoint stats alone: two endpoints read, then the served one's sample recorded, per request.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway } from '../test/helpers/gateway.ts';
import type { RequestBody } from '../src/gateway/inference/routing.ts';
import { createEndpointStats } from '../src/gateway/inference/endpoint-stats.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 7);

const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-routing-'));
const gw = await startTestGateway({
  dataDir,
  env: {
    COHORT_PROVIDER_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    COHORT_PROVIDER_OPENAI_API_KEY: 'sk-bench-shared',
    COHORT_PROVIDER_GROQ_BASE_URL: 'http://127.0.0.1:9/v1',
    COHORT_PROVIDER_GROQ_API_KEY: 'sk-bench-shared',
    COHORT_PROVIDER_GROQ_MODELS: 'openai/gpt-4o-mini',
  },
});
const principal = await gw.ctx.auth.authenticate(`Bearer ${gw.keys.api_key}`);
if (!principal) throw new Error('the bench key did not authenticate');
const message = { role: 'user', content: 'hi' };
const rows: [string, Record<string, unknown>][] = [
  ['plain', {}],
  ['sorted, sticky', { provider: { sort: 'latency' }, session_id: 'bench-session' }],
];
const results: Record<string, number[]> = {};
for (let r = 0; r < REPEAT; r++)
  for (const [name, extra] of rows) {
    const at = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) {
      const body = { model: 'openai/gpt-4o-mini', messages: [message], ...extra } as RequestBody;
      await gw.ctx.inference.prepare({ principal, body, style: 'chat', raw: body });
    }
    const used = process.cpuUsage(at);
    (results[name] ??= []).push((used.user + used.system) / CALLS);
  }
const stats = createEndpointStats();
const [served, other] = ['openai\u0000openai/gpt-4o-mini', 'groq\u0000openai/gpt-4o-mini'];
for (let r = 0; r < REPEAT; r++) {
  const at = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    stats.get(served);
    stats.get(other);
    stats.success(served, { ttftMs: (i * 7919) % 13, tps: (i * 104729) % 97 });
  }
  const used = process.cpuUsage(at);
  (results['endpoint stats: read two, record one'] ??= []).push((used.user + used.system) / CALLS);
}
rows.push(['endpoint stats: read two, record one', {}]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const [name] of rows)
  console.log(
    `${name}: ${median(results[name]!).toFixed(2)} µs CPU per call (rounds: ${results[name]!.map((x) => x.toFixed(1)).join(' ')})`,
  );
await gw.close();
rmSync(dataDir, { recursive: true, force: true });
