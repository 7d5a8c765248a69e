// The artifact `npm start` runs: dist/, compiled by scripts/build.mjs. A gateway started from it
// provisions an intern whose daemon and agent are the compiled ones too (no TypeScript loader in
// any of the three processes), started from their startup snapshots, and a turn runs end to end.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILT_MAIN, ensureBuilt, freePort, killDaemonsUnder, startGatewayProcess } from './helpers/gateway-process.ts';
import { callProcess, runningInternOn } from './helpers/interns.ts';
import { snapshotOf } from '../src/shared/entry.ts';
import { AgentProcess } from '../src/runtime/acp/index.ts';

const built = (program: string) => fileURLToPath(new URL(`../dist/runtime/${program}/main.js`, import.meta.url));

const dataDir = mkdtempSync(join(tmpdir(), 'cohort-build-'));
after(() => {
  killDaemonsUnder(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

/** Command lines of the processes that name this data dir (the sandbox's launcher and bwrap), and
 * of every process under them (the intern's daemon and its agent). */
function commandLines(): string[] {
  const procs = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .flatMap((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
        const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]!;
        return [{ pid, ppid, cmd }];
      } catch {
        return [];
      }
    });
  const ours = new Set(procs.filter((p) => p.cmd.includes(dataDir)).map((p) => p.pid));
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs)
      if (!ours.has(p.pid) && ours.has(p.ppid)) {
        ours.add(p.pid);
        grew = true;
      }
  }
  return procs.filter((p) => ours.has(p.pid)).map((p) => p.cmd);
}

test('the compiled gateway, daemon and agent run a turn without a TypeScript loader', async () => {
  ensureBuilt();
  const gw = await startGatewayProcess({ dataDir, port: await freePort(), built: true });
  try {
    const { id } = await runningInternOn(gw, 'built');
    const turn = await callProcess(
      gw,
      'POST',
      `/interns/${id}/chat/completions`,
      { stream: true, messages: [{ role: 'user', content: '/say compiled and running' }] },
      gw.keys().api_key,
    );
    assert.equal(turn.status, 200);
    assert.equal(turn.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'compiled and running');
    assert.equal(turn.done, true);
    assert.equal(turn.chunks.at(-2).choices[0].finish_reason, 'stop');

    const gateway = readFileSync(`/proc/${gw.child.pid}/cmdline`, 'utf8').split('\0').join(' ');
    assert.ok(gateway.includes(BUILT_MAIN) && !gateway.includes('tsx'), gateway);
    const runtime = commandLines();
    // Node processes only: the sandbox's launcher and bwrap name the daemon's command line too.
    const node = runtime.filter((c) => c.startsWith(`${process.execPath} `));
    const daemon = node.filter((c) => c.includes(`--snapshot-blob ${snapshotOf(built('daemon'))} --`));
    const agent = node.filter((c) => c.includes(`--snapshot-blob ${snapshotOf(built('agent'))} --`));
    assert.equal(daemon.length, 1, runtime.join('\n'));
    assert.equal(agent.length, 1, runtime.join('\n'));
    assert.deepEqual(
      runtime.filter((c) => c.includes('tsx')),
      [],
    );
  } finally {
    await gw.kill('SIGTERM');
  }
});

test('processes started from one snapshot draw random ids of their own', async () => {
  ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'cohort-snapshot-'));
  const sessions: string[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const agent = await AgentProcess.start({
        command: process.execPath,
        args: ['--snapshot-blob', snapshotOf(built('agent')), '--'],
        cwd: work,
        env: {
          PATH: process.env.PATH,
          COHORT_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
          COHORT_AGENT_MODEL: 'local/scripted',
          COHORT_AGENT_STATE_DIR: join(work, 'state'),
          LOG_LEVEL: 'warn',
        },
        handlers: {
          onUpdate: () => undefined,
          onPermission: async () => ({ outcome: { outcome: 'cancelled' } }),
          onElicitation: async () => ({ action: 'decline' }),
        },
      });
      assert.equal(agent.info.name, 'cohort-agent');
      sessions.push(await agent.newSession(work));
      await agent.stop();
    }
    assert.match(sessions[0]!, /^s_[0-9a-f-]{36}$/);
    assert.notEqual(sessions[0], sessions[1]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
