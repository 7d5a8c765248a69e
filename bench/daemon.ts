// npm run bench:daemon — the intern runtime's speed and memory, end to end over real processes:
// a daemon process driving the built-in agent process on the loopback scripted model, and a
// second daemon driving the minimal test agent (one ACP update per chunk, no model in between).
// Prints a markdown table of medians.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startScriptedServer } from '../test/helpers/scripted-server.ts';
import { DaemonClient } from '../test/helpers/daemon-client.ts';
import { daemonPaths } from '../src/shared/daemon-protocol.ts';
import { ensureBuilt } from '../test/helpers/gateway-process.ts';

const SECRET = 'bench-secret';
const REPEAT = Number(process.env.BENCH_REPEAT ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LATENCY_TURNS = 30;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const tsx = ['--import', import.meta.resolve('tsx')];
const file = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));

type Daemon = { proc: ChildProcess; client: DaemonClient; dir: string };

async function spawnDaemon(env: Record<string, string>): Promise<Daemon> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-'));
  // The compiled daemon, as a gateway started with `npm start` runs it (its agent is then compiled too).
  const proc = spawn(process.execPath, [file('../dist/runtime/daemon/main.js')], {
    env: { ...process.env, COHORT_DAEMON_SECRET: SECRET, COHORT_INTERN_DIR: dir, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => {
      rmSync(dir, { recursive: true, force: true });
      reject(new Error(`the daemon exited during start (code ${code})`));
    });
  });
  return { proc, dir, client: new DaemonClient((JSON.parse(line) as { listening: string }).listening, SECRET) };
}

async function stopDaemon(d: Daemon): Promise<void> {
  d.proc.kill('SIGTERM');
  await new Promise((r) => d.proc.once('exit', r));
  rmSync(d.dir, { recursive: true, force: true });
}

/** Runs a turn ROUNDS times; returns medians of events/s and of the model's chunks/s delivered. */
async function throughput(
  client: DaemonClient,
  prompt: string,
  expectText: string,
  chunkCount: number,
): Promise<{ events: number; chunks: number }> {
  const events: number[] = [];
  const chunks: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const res = await client.turn({ prompt });
    const s = (performance.now() - t0) / 1000;
    if (res.events.map((e) => (e.type === 'text' ? e.text : '')).join('') !== expectText) throw new Error('lost text');
    events.push(res.events.length / s);
    chunks.push(chunkCount / s);
  }
  return { events: median(events), chunks: median(chunks) };
}

// The daemon runs compiled, as a gateway started with `npm start` runs it.
ensureBuilt();
const model = await startScriptedServer();
const daemons: Daemon[] = [];
try {
  const builtin = await spawnDaemon({ COHORT_AGENT_BASE_URL: model.url, COHORT_AGENT_MODEL: 'local/scripted' });
  daemons.push(builtin);
  const mini = await spawnDaemon({
    COHORT_AGENT_COMMAND: JSON.stringify([process.execPath, ...tsx, file('../test/helpers/acp-mini-agent.ts')]),
  });
  daemons.push(mini);
  const c = builtin.client;
  const agentPid = ((await c.json('GET', daemonPaths.status)).json as { agent: { pid: number } }).agent.pid;
  // Warm up both processes (JIT, tsx caches) before measuring anything.
  for (let i = 0; i < 5; i++) await c.turn({ prompt: '/repeat 1000 x' });
  for (let i = 0; i < 3; i++) await mini.client.turn({ prompt: 'count 1000' });
  const idleRss = rssMiB(builtin.proc.pid!);
  const idleAgentRss = rssMiB(agentPid);

  // The scripted model's repeat chunks are `x`, then ` x` each.
  const repeat = await throughput(c, `/repeat ${REPEAT} x`, Array(REPEAT).fill('x').join(' '), REPEAT);
  const count = await throughput(
    mini.client,
    `count ${REPEAT}`,
    Array.from({ length: REPEAT }, (_, i) => `${i} `).join(''),
    REPEAT,
  );

  const toRun: number[] = [];
  const toText: number[] = [];
  for (let i = 0; i < LATENCY_TURNS; i++) {
    const t0 = performance.now();
    const o = await c.open('POST', daemonPaths.turns, { prompt: '/say hi' });
    for await (const e of o.events!) {
      if (e.type === 'run') toRun.push(performance.now() - t0);
      if (e.type === 'text') toText.push(performance.now() - t0);
    }
  }

  for (let i = 0; i < 100; i++) await c.turn({ session_id: `bench-${i}`, prompt: 'hello' });
  const rss100 = rssMiB(builtin.proc.pid!);
  const agentRss100 = rssMiB(agentPid);

  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const rows: [string, string][] = [
    [`built-in agent, \`/repeat ${REPEAT} x\`: model chunks/s reaching the daemon client`, n(repeat.chunks)],
    ['… daemon events/s on that stream (chunks that arrive together are sent as one event)', n(repeat.events)],
    [`any ACP agent, one \`session/update\` per chunk (${REPEAT} updates): daemon events/s`, n(count.events)],
    [
      `first event (\`run\`) latency, ms (median of ${LATENCY_TURNS} turns)`,
      toRun.length ? median(toRun).toFixed(2) : '-',
    ],
    [`first text event latency, ms (median of ${LATENCY_TURNS} turns)`, median(toText).toFixed(2)],
    ['daemon RSS idle, MiB', idleRss.toFixed(1)],
    ['daemon RSS with 100 sessions, MiB', rss100.toFixed(1)],
    ['built-in agent RSS idle / with 100 sessions, MiB', `${idleAgentRss.toFixed(1)} / ${agentRss100.toFixed(1)}`],
  ];
  console.log(`Medians of ${ROUNDS} runs (throughput) and ${LATENCY_TURNS} turns (latency).\n`);
  console.log('| measure | value |\n|---|---|');
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
} finally {
  await Promise.all(daemons.map(stopDaemon));
  await model.close();
}
