// npm run bench:isolation — what isolating interns costs, isolated against COHORT_UNSAFE_NO_ISOLATION
// in one run: two compiled gateways (as `npm start` runs), each provisioning interns and running
// turns, taken in turn so both see the same machine. Prints a markdown table of medians.
// Targets (issue: intern isolation): under 150 ms added to provisioning, under 1 ms added to a
// turn's time to first content; memory per idle intern reported beside them.
import { readdirSync, readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, freePort, killDaemonsUnder, startGatewayProcess, type GatewayProcess } from '../src/testing/gateway-process.ts';

const INTERNS = Number(process.env.BENCH_INTERNS ?? 8);
const TURNS = Number(process.env.BENCH_TURNS ?? 30);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;

type Side = { name: string; gw: GatewayProcess; dir: string; interns: string[]; provisionMs: number[]; ttfcMs: number[]; rssMiB: number[] };

async function call(gw: GatewayProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.keys().management_key}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return (await res.json()) as any;
}

async function provision(s: Side): Promise<void> {
  const t0 = performance.now();
  const { id } = await call(s.gw, 'POST', '/interns', { name: `bench-${s.interns.length}`, provision: true });
  for (;;) {
    const got = await call(s.gw, 'GET', `/interns/${id}`);
    if (got.status === 'running') break;
    if (got.status === 'failed') throw new Error(`${s.name}: ${got.last_failure_message}`);
    await new Promise((r) => setTimeout(r, 2));
  }
  s.provisionMs.push(performance.now() - t0);
  s.interns.push(id);
}

/** Time from sending a turn to its first content chunk arriving. */
async function firstContent(s: Side, id: string): Promise<void> {
  const t0 = performance.now();
  const res = await fetch(`${s.gw.url}/interns/${id}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.gw.keys().api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: '/say hello' }] }),
  });
  const reader = res.body!.getReader();
  let seen = '';
  let at = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
    if (!at && seen.includes('"content"')) at = performance.now() - t0;
  }
  if (!at || !seen.includes('[DONE]')) throw new Error(`${s.name}: a turn did not complete: ${seen.slice(0, 300)}`);
  s.ttfcMs.push(at);
}

function children(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/** RSS of every process of one intern (launcher, bwrap, daemon, agent, …), summed. */
function internRss(dataDir: string, id: string): number {
  const roots = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join(dataDir, 'interns', id));
    } catch {
      return false;
    }
  });
  const all = new Set<number>();
  const walk = (p: number) => {
    if (all.has(p)) return;
    all.add(p);
    children(p).forEach(walk);
  };
  roots.forEach(walk);
  let kib = 0;
  for (const p of all) {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {}
  }
  return kib / 1024;
}

async function side(name: string, env: Record<string, string>): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `cohort-bench-${name}-`));
  const gw = await startGatewayProcess({ dataDir: dir, port: await freePort(), built: true, env: { LOG_LEVEL: 'warn', COHORT_MAX_INTERNS_PER_ACCOUNT: '1000', ...env } });
  return { name, gw, dir, interns: [], provisionMs: [], ttfcMs: [], rssMiB: [] };
}

ensureBuilt();
const sides = [await side('isolated', {}), await side('unisolated', { COHORT_UNSAFE_NO_ISOLATION: '1' })];
try {
  for (let i = 0; i < INTERNS; i++) for (const s of sides) await provision(s);
  // One warm-up turn per intern starts its agent; then turns taken in turn across both sides.
  for (const s of sides) for (const id of s.interns) await firstContent(s, id);
  for (const s of sides) s.ttfcMs.length = 0;
  for (let t = 0; t < TURNS; t++) for (const s of sides) await firstContent(s, s.interns[t % s.interns.length]!);
  await new Promise((r) => setTimeout(r, 2000));
  for (const s of sides) for (const id of s.interns) s.rssMiB.push(internRss(s.dir, id));
  const [iso, raw] = sides as [Side, Side];
  const row = (s: Side) =>
    `| ${s.name} | ${median(s.provisionMs).toFixed(0)} | ${p90(s.provisionMs).toFixed(0)} | ${median(s.ttfcMs).toFixed(2)} | ${p90(s.ttfcMs).toFixed(2)} | ${median(s.rssMiB).toFixed(1)} |`;
  console.log(`\n${INTERNS} interns per side, ${TURNS} turns per side (\`/say hello\`, built-in agent, scripted model), ${new Date().toISOString().slice(0, 10)}\n`);
  console.log('| runtime | provision p50 (ms) | provision p90 (ms) | first content p50 (ms) | first content p90 (ms) | idle intern after a turn, RSS of all its processes (MiB) |');
  console.log('|---|---|---|---|---|---|');
  console.log(row(iso));
  console.log(row(raw));
  const addedProvision = median(iso.provisionMs) - median(raw.provisionMs);
  const addedTurn = median(iso.ttfcMs) - median(raw.ttfcMs);
  console.log(`\nadded by isolation: provisioning ${addedProvision.toFixed(0)} ms (target < 150: ${addedProvision < 150 ? 'met' : 'NOT met'}), first content ${addedTurn.toFixed(2)} ms (target < 1: ${addedTurn < 1 ? 'met' : 'NOT met'}), memory ${(median(iso.rssMiB) - median(raw.rssMiB)).toFixed(1)} MiB per idle intern`);
} finally {
  for (const s of sides) {
    await s.gw.kill('SIGTERM');
    killDaemonsUnder(s.dir);
    rmSync(s.dir, { recursive: true, force: true });
  }
}
