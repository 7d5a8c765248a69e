// npm run bench:fleet — a thousand interns on one machine (docs/fleet.md): one compiled gateway
// provisions N interns and gives each one turn; they fall asleep; then A of them stay active with
// turns at a model's pace while a sampler wakes sleeping ones. Prints a markdown table: memory per
// sleeping intern, time to first content for a turn to a sleeping intern and to an awake one, and
// the machine's memory at the end. Targets (issue 25): < 2 MB per sleeping intern, waking p50 <
// 300 ms and p99 < 1 s, awake unchanged, < 8 GB in all.
//
// Flags: --interns N (1000) --active A (50) --duration S (60, seconds of the active phase)
//        --samples K (100, wakes of sleeping interns timed beside the active ones)
//        --alone J (30, wakes timed one at a time before, with nothing else running)
//        --idle MS (5000, COHORT_INTERN_IDLE_MS)
//        --disk MB (0, COHORT_INTERN_DISK_MB: plain directories) --parallel P (4, provisions at once)
//        --spares S (0, COHORT_WARM_SPARES: sandboxes started ahead for wakes; 0 starts every wake cold)
//        --pace MS (0, the least time from one timed wake's first content to the next wake: 0 wakes
//        back to back, faster than one spare can be replaced; 1000 is about one wake a second)
//        --busy B (0, interns that burn CPU through the active phase: each runs one shell command
//        after another, a busy loop of 20 s, as an intern compiling would)
import { readdirSync, readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execSync } from 'node:child_process';
import { firstContentMs, provisionTimed } from './intern-runtime.ts';
import {
  ensureBuilt,
  freePort,
  killDaemonsUnder,
  startGatewayProcess,
  type GatewayProcess,
} from '../test/helpers/gateway-process.ts';

const { values: a } = parseArgs({
  options: {
    interns: { type: 'string', default: '1000' },
    active: { type: 'string', default: '50' },
    duration: { type: 'string', default: '60' },
    samples: { type: 'string', default: '100' },
    alone: { type: 'string', default: '30' },
    idle: { type: 'string', default: '5000' },
    disk: { type: 'string', default: '0' },
    parallel: { type: 'string', default: '4' },
    spares: { type: 'string', default: '0' },
    pace: { type: 'string', default: '0' },
    busy: { type: 'string', default: '0' },
  },
});
const N = Number(a.interns);
const ACTIVE = Math.min(N, Number(a.active));
const DURATION_MS = Number(a.duration) * 1000;
const SAMPLES = Number(a.samples);
const ALONE = Number(a.alone);
const IDLE_MS = Number(a.idle);
const PARALLEL = Number(a.parallel);
const PACE_MS = Number(a.pace);
const BUSY = Number(a.busy);

const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(xs.length * p))]! : NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => kib / 1024;

/** Memory the machine uses (MemTotal − MemAvailable), in MiB. */
function machineUsedMiB(): number {
  const m = readFileSync('/proc/meminfo', 'utf8');
  const v = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(m)![1]);
  return mib(v('MemTotal') - v('MemAvailable'));
}

const pss = (pid: number) => {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

/** PSS (shared pages split between their users, so a sum is what the processes really cost) of every
 * intern process (launchers, sandboxes, daemons, agents, and the warm spares, taken or waiting)
 * under the data dir, in MiB, and their count. */
function internProcesses(dataDir: string): { count: number; pssMiB: number } {
  const mine = [join(dataDir, 'interns'), join(dataDir, 'run', 'spares')];
  const roots = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((p) => {
      try {
        const line = readFileSync(`/proc/${p}/cmdline`, 'utf8');
        return mine.some((m) => line.includes(m));
      } catch {
        return false;
      }
    });
  const all = new Set<number>();
  const walk = (p: number) => {
    if (all.has(p)) return;
    all.add(p);
    try {
      for (const t of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
          walk(Number(c));
    } catch {}
  };
  roots.forEach(walk);
  let kib = 0;
  for (const p of all) kib += pss(p);
  return { count: all.size, pssMiB: mib(kib) };
}

async function powers(gw: GatewayProcess): Promise<Record<string, number>> {
  const text = await (await fetch(gw.url.replace(/\/api\/v1$/, '/metrics'))).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^cohort_running_interns\{power="(\w+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

let refusals = 0;
/** A turn as a client that honours `503 busy` and its Retry-After sends it: milliseconds from the
 * first attempt to the first content, waits included. */
async function turnMs(gw: GatewayProcess, id: string, prompt: string): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const res = await fetch(`${gw.url}/interns/${id}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.keys().api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: prompt }] }),
    });
    if (res.status === 503) {
      refusals++;
      await res.text();
      await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
      continue;
    }
    const reader = res.body!.getReader();
    let seen = '';
    let at = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
      if (!at && seen.includes('"content"')) at = performance.now() - t0;
    }
    if (!at || !seen.includes('[DONE]'))
      throw new Error(`a turn did not complete (${res.status}): ${seen.slice(0, 300)}`);
    return at;
  }
}

async function pool<T>(items: T[], n: number, fn: (t: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

ensureBuilt();
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-fleet-'));
const gw = await startGatewayProcess({
  dataDir: dir,
  port: await freePort(),
  built: true,
  fdLimit: 65536,
  env: {
    LOG_LEVEL: 'warn',
    COHORT_MAX_INTERNS_PER_ACCOUNT: String(N + 10),
    COHORT_TURNS_PER_MINUTE: '1000000',
    COHORT_MAX_INTERN_STREAMS_PER_KEY: '0',
    COHORT_MAX_INTERN_STREAMS_PER_ACCOUNT: '0',
    COHORT_INTERN_IDLE_MS: String(IDLE_MS),
    COHORT_INTERN_DISK_MB: a.disk!,
    COHORT_WARM_SPARES: a.spares!,
  },
});
const gatewayPid = gw.child.pid!;
try {
  const base = { machine: machineUsedMiB(), gateway: mib(pss(gatewayPid)) };
  const t0 = Date.now();
  const ids: string[] = new Array(N);
  const provisionMs: number[] = [];
  const firstTurnMs: number[] = [];
  await pool([...Array(N).keys()], PARALLEL, async (_, i) => {
    const { id, ms } = await provisionTimed(gw, { name: `fleet-${i}` });
    provisionMs.push(ms);
    ids[i] = id;
    firstTurnMs.push(await firstContentMs(gw, id, '/say hello'));
    if ((i + 1) % 100 === 0)
      process.stderr.write(
        `provisioned ${i + 1}/${N} in ${((Date.now() - t0) / 1000).toFixed(0)} s; machine ${machineUsedMiB().toFixed(0)} MiB\n`,
      );
  });
  let peak = machineUsedMiB();
  for (let p = await powers(gw); (p.awake ?? 0) + (p.sleeping ?? 0) + (p.waking ?? 0) > 0; p = await powers(gw)) {
    peak = Math.max(peak, machineUsedMiB());
    await sleep(500);
  }
  await sleep(1000);
  const asleepAt = { machine: machineUsedMiB(), gateway: mib(pss(gatewayPid)), interns: internProcesses(dir) };
  const perSleeping = (asleepAt.gateway - base.gateway + asleepAt.interns.pssMiB) / N;
  process.stderr.write(`all ${N} asleep after ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);

  // A wake alone: sleeping interns woken one after another with nothing else running.
  const sleepers = ids.slice(ACTIVE);
  const aloneMs: number[] = [];
  for (let k = 0; k < ALONE && sleepers.length; k++) {
    const id = sleepers.splice(Math.floor(Math.random() * sleepers.length), 1)[0]!;
    aloneMs.push(await turnMs(gw, id, '/say hello'));
    await sleep(PACE_MS);
  }

  // Active phase: ACTIVE interns take turns at a model's pace (a turn streams for about 2 s, then
  // the user reads and types for 2–5 s). They all wake at once first (reported apart); once they
  // are awake, sleeping interns are woken one after another beside their turns.
  const wakeMs: number[] = [];
  const awakeMs: number[] = [];
  const activeWakeMs: number[] = [];
  const until = Date.now() + DURATION_MS;
  const turn =
    '/say Here is the first part of the answer.\n/sleep 1000\n/say And here is the rest of it, a second later.';
  let allAwake!: () => void;
  const awake = new Promise<void>((resolve) => {
    allAwake = resolve;
  });
  const workers = ids.slice(0, ACTIVE).map(async (id) => {
    activeWakeMs.push(await turnMs(gw, id, turn));
    if (activeWakeMs.length === ACTIVE) allAwake();
    while (Date.now() < until) {
      await sleep(2000 + Math.random() * 3000);
      awakeMs.push(await turnMs(gw, id, turn));
    }
  });
  const busyTurn = "/shell timeout 20 sh -c 'while :; do :; done'; echo busy";
  // The busy ones wake before the sampler starts: the first sampled wake would otherwise queue
  // behind their wakes.
  const busyAwake = sleepers.splice(0, BUSY).map(async (id) => {
    await awake;
    await turnMs(gw, id, '/say ready');
    return id;
  });
  const busy = busyAwake.map(async (woken) => {
    const id = await woken;
    while (Date.now() < until) await turnMs(gw, id, busyTurn);
  });
  const sampler = (async () => {
    await Promise.all([awake, ...busyAwake]);
    const spacing = Math.max(PACE_MS, (until - Date.now()) / SAMPLES - 500);
    // Only while the active ones take turns: a wake after the active phase would be a wake alone.
    for (let k = 0; k < SAMPLES && sleepers.length && Date.now() < until; k++) {
      const id = sleepers.splice(Math.floor(Math.random() * sleepers.length), 1)[0]!;
      wakeMs.push(await turnMs(gw, id, '/say hello'));
      await sleep(spacing);
    }
  })();
  await Promise.all([...workers, ...busy, sampler]);
  const end = { machine: machineUsedMiB(), interns: internProcesses(dir), powers: await powers(gw) };
  peak = Math.max(peak, end.machine);

  const row = (name: string, xs: number[], target: string) =>
    `| ${name} | ${xs.length} | ${pct(xs, 0.5).toFixed(0)} | ${pct(xs, 0.9).toFixed(0)} | ${pct(xs, 0.99).toFixed(0)} | ${target} |`;
  const commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  console.log(
    `\n${N} interns (disk ${a.disk === '0' ? 'plain directories' : `${a.disk} MB images`}), ${a.spares} warm spares, sampled wakes paced ${PACE_MS} ms, idle ${IDLE_MS} ms, ${ACTIVE} active for ${DURATION_MS / 1000} s${BUSY ? ` beside ${BUSY} busy ones` : ''}, ${new Date().toISOString().slice(0, 10)} at ${commit}\n`,
  );
  console.log('| turn | n | first content p50 (ms) | p90 (ms) | p99 (ms) | target |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('to a sleeping intern, alone (the fleet asleep)', aloneMs, 'p50 < 300, p99 < 1000'));
  console.log(
    row(`to a sleeping intern, one at a time beside the ${ACTIVE} active ones`, wakeMs, 'p50 < 300, p99 < 1000'),
  );
  console.log(row(`to a sleeping intern (the ${ACTIVE} active ones, all at once, retrying on 503)`, activeWakeMs, ''));
  console.log(row('to an awake intern (active phase)', awakeMs, 'unchanged'));
  console.log(row('first turn after provisioning (awake)', firstTurnMs, ''));
  console.log(`\n| measure | value |\n|---|---|`);
  console.log(
    `| provision p50 / p90 (ms) | ${pct(provisionMs, 0.5).toFixed(0)} / ${pct(provisionMs, 0.9).toFixed(0)} |`,
  );
  console.log(
    `| memory per sleeping intern: gateway growth + intern processes, PSS (MiB) | ${perSleeping.toFixed(3)} (target < 2) |`,
  );
  console.log(
    `| intern processes while all slept (warm spares included) | ${asleepAt.interns.count} (${asleepAt.interns.pssMiB.toFixed(1)} MiB) |`,
  );
  console.log(
    `| gateway PSS: start / all asleep (MiB) | ${base.gateway.toFixed(0)} / ${asleepAt.gateway.toFixed(0)} |`,
  );
  console.log(
    `| machine memory used: start / all asleep / end / peak (MiB) | ${base.machine.toFixed(0)} / ${asleepAt.machine.toFixed(0)} / ${end.machine.toFixed(0)} / ${peak.toFixed(0)} (target < 8192 at the end) |`,
  );
  console.log(`| 503 busy (wake queue full), retried after Retry-After | ${refusals} |`);
  console.log(
    `| intern processes at the end | ${end.interns.count} (${end.interns.pssMiB.toFixed(0)} MiB PSS); power ${JSON.stringify(end.powers)} |`,
  );
} finally {
  await gw.kill('SIGTERM');
  killDaemonsUnder(dir);
  rmSync(dir, { recursive: true, force: true });
}
