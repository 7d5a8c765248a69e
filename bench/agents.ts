// npm run bench:agents — each catalogue agent as an intern, in one run on one compiled gateway:
// time to provision, time to first content of a turn, and the memory of all of an intern's
// processes when idle after a turn and while a turn works. Prints a markdown table of medians.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, freePort, killDaemonsUnder, startGatewayProcess } from '../test/helpers/gateway-process.ts';
import { call, firstContentMs, internRss, median, provisionTimed } from './intern-runtime.ts';

const INTERNS = Number(process.env.BENCH_INTERNS ?? 3);
const TURNS = Number(process.env.BENCH_TURNS ?? 12);
// Claude Code takes a prompt that starts with "/" as its own command: scripts start with text.
const PROMPT = 'Hello.\n/say hello';
const WORKING = 'Hello.\n/say working\n/sleep 1500\n/say done';

ensureBuilt();
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-agents-'));
const gw = await startGatewayProcess({
  dataDir: dir,
  port: await freePort(),
  built: true,
  env: { LOG_LEVEL: 'warn', COHORT_MAX_INTERNS_PER_ACCOUNT: '1000' },
});
try {
  const agents = ((await call(gw, 'GET', '/agents')).data as { id: string }[]).map((a) => a.id);
  const rows: string[] = [];
  const by = Object.fromEntries(
    agents.map((a) => [
      a,
      {
        interns: [] as string[],
        provision: [] as number[],
        ttfc: [] as number[],
        idle: [] as number[],
        working: [] as number[],
      },
    ]),
  );
  for (let i = 0; i < INTERNS; i++) {
    for (const a of agents) {
      const { id, ms } = await provisionTimed(gw, { name: `${a}-${i}`, agent: a });
      by[a]!.interns.push(id);
      by[a]!.provision.push(ms);
    }
  }
  // The first turn starts each intern's agent; the next ones are timed, agents taken in turn.
  for (const a of agents) for (const id of by[a]!.interns) await firstContentMs(gw, id, PROMPT);
  for (let t = 0; t < TURNS; t++)
    for (const a of agents) by[a]!.ttfc.push(await firstContentMs(gw, by[a]!.interns[t % INTERNS]!, PROMPT));
  await new Promise((r) => setTimeout(r, 2000));
  for (const a of agents) for (const id of by[a]!.interns) by[a]!.idle.push(internRss(dir, id));
  for (const a of agents) {
    for (const id of by[a]!.interns)
      await firstContentMs(gw, id, WORKING, () => by[a]!.working.push(internRss(dir, id)));
  }
  for (const a of agents) {
    const s = by[a]!;
    rows.push(
      `| ${a} | ${median(s.provision).toFixed(0)} | ${median(s.ttfc).toFixed(1)} | ${median(s.idle).toFixed(1)} | ${median(s.working).toFixed(1)} |`,
    );
  }
  console.log(
    `\n${INTERNS} interns per agent, ${TURNS} timed turns per agent (scripted model), ${new Date().toISOString().slice(0, 10)}\n`,
  );
  console.log(
    '| agent | provision p50 (ms) | first content p50 (ms) | idle after a turn, RSS of all its processes (MiB) | while a turn works (MiB) |',
  );
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await gw.kill('SIGTERM');
  killDaemonsUnder(dir);
  rmSync(dir, { recursive: true, force: true });
}
