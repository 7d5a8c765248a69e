// npm run bench:daemon — the intern runtime's speed and memory, end to end over real processes:
// a daemon process driving the built-in agent process, on the loopback scripted model.
// Prints a markdown table of medians.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startScriptedServer } from '../src/testing/scripted-server.ts';
import { DaemonClient } from '../src/daemon/test-client.ts';
import { daemonPaths } from '../src/protocol/daemon.ts';

const SECRET = 'bench-secret';
const REPEAT = Number(process.env.BENCH_REPEAT ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LATENCY_TURNS = 30;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const model = await startScriptedServer();
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-'));
const daemon = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../src/daemon/main.ts', import.meta.url))], {
  env: { ...process.env, COHORT_DAEMON_SECRET: SECRET, COHORT_INTERN_DIR: dir, COHORT_AGENT_BASE_URL: model.url, COHORT_AGENT_MODEL: 'local/scripted', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const line = await new Promise<string>((resolve) => createInterface({ input: daemon.stdout }).once('line', resolve));
  const client = new DaemonClient((JSON.parse(line) as { listening: string }).listening, SECRET);
  const status = async () => (await client.json('GET', daemonPaths.status)).json as { agent: { pid: number } };
  const agentPid = (await status()).agent.pid;

  // Warm up both processes (JIT, tsx caches) before measuring anything.
  for (let i = 0; i < 5; i++) await client.turn({ prompt: '/repeat 1000 x' });
  const idleRss = rssMiB(daemon.pid!);
  const idleAgentRss = rssMiB(agentPid);

  const rates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const { events } = await client.turn({ prompt: `/repeat ${REPEAT} x` });
    const s = (performance.now() - t0) / 1000;
    if (events.filter((e) => e.type === 'text').length !== REPEAT) throw new Error('lost events');
    rates.push(events.length / s);
  }

  const toRun: number[] = [];
  const toText: number[] = [];
  for (let i = 0; i < LATENCY_TURNS; i++) {
    const t0 = performance.now();
    const o = await client.open('POST', daemonPaths.turns, { prompt: '/say hi' });
    for await (const e of o.events!) {
      if (e.type === 'run') toRun.push(performance.now() - t0);
      if (e.type === 'text') toText.push(performance.now() - t0);
    }
  }

  for (let i = 0; i < 100; i++) await client.turn({ session_id: `bench-${i}`, prompt: 'hello' });
  const rss100 = rssMiB(daemon.pid!);
  const agentRss100 = rssMiB(agentPid);

  const rows: [string, string][] = [
    [`events/s, agent → daemon client (/repeat ${REPEAT}, median of ${ROUNDS})`, Math.round(median(rates)).toLocaleString('en-US')],
    [`first event (\`run\`) latency, ms (median of ${LATENCY_TURNS})`, median(toRun).toFixed(2)],
    [`first text event latency, ms (median of ${LATENCY_TURNS})`, median(toText).toFixed(2)],
    ['daemon RSS idle, MiB', idleRss.toFixed(1)],
    ['daemon RSS with 100 sessions, MiB', rss100.toFixed(1)],
    ['agent RSS idle / with 100 sessions, MiB', `${idleAgentRss.toFixed(1)} / ${agentRss100.toFixed(1)}`],
  ];
  console.log('| measure | value |\n|---|---|');
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
} finally {
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
