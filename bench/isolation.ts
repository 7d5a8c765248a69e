// npm run bench:isolation — what isolating interns costs, isolated against COHORT_UNSAFE_NO_ISOLATION
// in one run: compiled gateways (as `npm start` runs), each provisioning interns and running
// turns, taken in turn so all see the same machine. Prints a markdown table of medians.
// Targets: under 150 ms added to provisioning and under 1 ms to a turn's time to first content by
// isolation; memory per idle intern reported beside them. With BENCH_BASELINE=<commit>, that
// commit's isolated build runs beside this one, and the table says what this build adds to it
// (the seccomp filters' targets: under 5 ms to provisioning, under 0.2 ms to a turn).
import { rmSync, mkdtempSync } from 'node:fs';
import { firstContentMs, internRss, median, p90, provisionTimed } from './intern-runtime.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baselineCheckout } from './baseline.ts';
import {
  ensureBuilt,
  freePort,
  killDaemonsUnder,
  startGatewayProcess,
  type GatewayProcess,
} from '../test/helpers/gateway-process.ts';

const INTERNS = Number(process.env.BENCH_INTERNS ?? 8);
const TURNS = Number(process.env.BENCH_TURNS ?? 30);
type Side = {
  name: string;
  gw: GatewayProcess;
  dir: string;
  interns: string[];
  provisionMs: number[];
  ttfcMs: number[];
  rssMiB: number[];
};

async function provision(s: Side): Promise<void> {
  const { id, ms } = await provisionTimed(s.gw, { name: `bench-${s.interns.length}` });
  s.provisionMs.push(ms);
  s.interns.push(id);
}

async function side(name: string, env: Record<string, string>, main?: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-'));
  const gw = await startGatewayProcess({
    dataDir: dir,
    port: await freePort(),
    built: true,
    main,
    env: { LOG_LEVEL: 'warn', COHORT_MAX_INTERNS_PER_ACCOUNT: '1000', ...env },
  });
  return { name, gw, dir, interns: [], provisionMs: [], ttfcMs: [], rssMiB: [] };
}

ensureBuilt();
const baseline = process.env.BENCH_BASELINE;
const sides = [
  await side('isolated', {}),
  await side('unisolated', { COHORT_UNSAFE_NO_ISOLATION: '1' }),
  ...(baseline
    ? [await side(`isolated at ${baseline}`, {}, join(baselineCheckout(baseline, { build: true }), 'dist', 'main.js'))]
    : []),
];
try {
  for (let i = 0; i < INTERNS; i++) for (const s of sides) await provision(s);
  // One warm-up turn per intern starts its agent; then turns taken in turn across both sides.
  for (const s of sides) for (const id of s.interns) await firstContentMs(s.gw, id, '/say hello');
  for (const s of sides) s.ttfcMs.length = 0;
  for (let t = 0; t < TURNS; t++)
    for (const s of sides) s.ttfcMs.push(await firstContentMs(s.gw, s.interns[t % s.interns.length]!, '/say hello'));
  await new Promise((r) => setTimeout(r, 2000));
  for (const s of sides) for (const id of s.interns) s.rssMiB.push(internRss(s.dir, id));
  const [iso, raw, before] = sides as [Side, Side, Side | undefined];
  const row = (s: Side) =>
    `| ${s.name} | ${median(s.provisionMs).toFixed(0)} | ${p90(s.provisionMs).toFixed(0)} | ${median(s.ttfcMs).toFixed(2)} | ${p90(s.ttfcMs).toFixed(2)} | ${median(s.rssMiB).toFixed(1)} |`;
  console.log(
    `\n${INTERNS} interns per side, ${TURNS} turns per side (\`/say hello\`, built-in agent, scripted model), ${new Date().toISOString().slice(0, 10)}\n`,
  );
  console.log(
    '| runtime | provision p50 (ms) | provision p90 (ms) | first content p50 (ms) | first content p90 (ms) | idle intern after a turn, RSS of all its processes (MiB) |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const s of sides) console.log(row(s));
  const addedProvision = median(iso.provisionMs) - median(raw.provisionMs);
  const addedTurn = median(iso.ttfcMs) - median(raw.ttfcMs);
  console.log(
    `\nadded by isolation: provisioning ${addedProvision.toFixed(0)} ms (target < 150: ${addedProvision < 150 ? 'met' : 'NOT met'}), first content ${addedTurn.toFixed(2)} ms (target < 1: ${addedTurn < 1 ? 'met' : 'NOT met'}), memory ${(median(iso.rssMiB) - median(raw.rssMiB)).toFixed(1)} MiB per idle intern`,
  );
  if (before) {
    const p = median(iso.provisionMs) - median(before.provisionMs);
    const t = median(iso.ttfcMs) - median(before.ttfcMs);
    console.log(
      `added by this build to ${baseline}: provisioning ${p.toFixed(1)} ms (target < 5: ${p < 5 ? 'met' : 'NOT met'}), first content ${t.toFixed(2)} ms (target < 0.2: ${t < 0.2 ? 'met' : 'NOT met'})`,
    );
  }
} finally {
  for (const s of sides) {
    await s.gw.kill('SIGTERM');
    killDaemonsUnder(s.dir);
    rmSync(s.dir, { recursive: true, force: true });
  }
}
