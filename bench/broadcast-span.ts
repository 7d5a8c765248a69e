// The CPU one broadcast span costs a gateway, measured alone: a build's broadcaster
// (dist/gateway/observability/) given a model request's span per request, queued, serialized as
// OTLP protobuf and posted in batches to a collector in another process, against the same loop
// without broadcast. Run by bench/inference.ts's broadcast section for each build it compares, as
// `node --import tsx bench/broadcast-span.ts DIST_DIR`; prints one line of JSON (µs per span).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setImmediate as tick } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const dist = process.argv[2] ?? 'dist';
const module = (path: string) => import(pathToFileURL(`${dist}/${path}`).href);
const { createBroadcaster } = await module('gateway/observability/broadcast.js');
const { modelSpan } = await module('gateway/observability/spans.js');
const { createLogger } = await module('shared/log.js');

const collector = spawn(
  process.execPath,
  [
    '-e',
    "const s = require('node:http').createServer((q, r) => q.resume().on('end', () => r.end('{}'))).listen(0, '127.0.0.1', () => console.log(s.address().port))",
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [port] = (await once(collector.stdout!, 'data')) as [Buffer];
const counts = { exported: 0, dropped: 0 };
const b = createBroadcaster({
  log: createLogger({ level: 'silent' }),
  installation: {
    key: 'bench',
    url: `http://127.0.0.1:${String(port).trim()}/v1/traces`,
    protocol: 'http/protobuf',
    headers: {},
    internalAllowed: true,
  },
  destinationsOf: async () => ({ enabled: true, list: [] }),
  cacheMs: 3_600_000,
  maxQueued: 1_000_000,
  onSpans: (o: { exported: number } | { dropped: number }) =>
    'exported' in o ? (counts.exported += o.exported) : (counts.dropped += o.dropped),
});
/** A request-log row as a model request makes one. */
const row = (i: number) => ({
  id: `gen-01a21d47-dd54-7ef6-964c-${String(i).padStart(12, '0')}`,
  workspaceId: 'ws_01a21d47dd547ef6',
  apiStyle: 'chat',
  requestedModel: 'openai/gpt-4o-mini',
  model: 'openai/gpt-4o-mini',
  provider: 'openai',
  isByok: false,
  streamed: true,
  attempts: 1,
  status: 200,
  finishReason: 'stop',
  error: null,
  latencyMs: 12,
  promptTokens: 9,
  completionTokens: 5,
  cachedTokens: null,
  cost: 0.0000042,
  createdAt: new Date(),
});
const observation = { sessionId: null, user: null, metadata: null };

/** CPU µs per request of `n` requests (50 a tick, as a loaded gateway finishes them), with or without a span each. */
async function run(n: number, broadcast: boolean): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const r = row(i);
    if (broadcast) b.emit('ws', () => modelSpan(r, observation));
    if (i % 50 === 49) await tick();
  }
  await b.flush();
  const d = process.cpuUsage(before);
  return (d.user + d.system) / n;
}

await run(20_000, true);
const costs: number[] = [];
for (let k = 0; k < 5; k++) {
  const without = await run(100_000, false);
  costs.push((await run(100_000, true)) - without);
}
await b.close();
collector.kill();
costs.sort((x, y) => x - y);
console.log(JSON.stringify({ dist, usPerSpan: costs[2], all: costs, ...counts }));
