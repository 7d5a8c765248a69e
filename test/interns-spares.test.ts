// Warm spares (docs/fleet.md, "Warm spares"): a gateway keeps a sandbox whose daemon and built-in
// agent have started without an intern, and a provision or a wake hands it its intern. Real
// gateway, real sandboxes, the scripted model driving the intern's shell. What a spare-started
// intern must be is what a cold-started one is: its own uid without capabilities, its own disk,
// nice 10 for what it runs, its sessions across a sleep; and nothing of a spare may outlive its use.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { getInternById } from '../src/gateway/interns/interns.ts';
import { user, text } from './helpers/chat.ts';
import { waitFor, waitForValue } from './helpers/wait.ts';

const ENV = {
  COHORT_WARM_SPARES: '1',
  // Long enough that the checks after a turn find its intern still awake on a loaded machine (at
  // 400 ms the first test once found its agent gone: the intern had gone to sleep under it).
  COHORT_INTERN_IDLE_MS: '2000',
  COHORT_INTERN_DISK_MB: '64',
  COHORT_INTERN_MAX_PROCESSES: '96',
  COHORT_MAX_INTERNS_PER_ACCOUNT: '8',
};

const sparesDir = (gw: TestGateway) => join(gw.dataDir, 'run', 'spares');
const read = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

/** Waits until a spare is up and waiting for an intern; returns its directory. A spare starts
 * below every intern, so on a loaded machine that may take a while. */
function spareWaiting(gw: TestGateway): Promise<string> {
  return waitFor(
    'a spare is waiting for an intern',
    () =>
      (existsSync(sparesDir(gw)) ? readdirSync(sparesDir(gw)) : [])
        .map((name) => join(sparesDir(gw), name))
        .find(
          (dir) => !existsSync(join(dir, 'claimed')) && read(join(dir, 'daemon.log')).includes('{"spare":"waiting"}'),
        ),
    { timeoutMs: 60_000, everyMs: 50 },
  );
}

async function asleep(gw: TestGateway, id: string): Promise<void> {
  await waitFor('the intern fell asleep', async () => (await getInternById(gw.ctx.store.db, id))?.power === 'asleep', {
    timeoutMs: 30_000,
    everyMs: 50,
  });
}

const cmdline = (pid: number) => read(`/proc/${pid}/cmdline`).split('\0').join(' ');
const children = (pid: number) =>
  read(`/proc/${pid}/task/${pid}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
const status = (pid: number, field: string) =>
  new RegExp(`^${field}:[ \\t]*(.*)$`, 'm').exec(read(`/proc/${pid}/status`))?.[1];

/** The nice values of every thread of `pid` (field 19 of each thread's stat, after the command's parentheses). */
function threadNices(pid: number): number[] {
  return [
    ...new Set(
      readdirSync(`/proc/${pid}/task`).map((t) =>
        Number(read(`/proc/${pid}/task/${t}/stat`).split(') ')[1]!.split(' ')[16]),
      ),
    ),
  ];
}

/** A launcher's daemon (launcher → bwrap → bwrap's init → daemon) and the daemon's agent. */
function daemonAndAgent(launcher: number): { daemon: number; agent: number } {
  const daemon = children(children(children(launcher)[0]!)[0]!)[0]!;
  return { daemon, agent: children(daemon).find((p) => cmdline(p).includes('/runtime/agent/'))! };
}

/** Processes on the host whose command line names `dir`. */
function processesNaming(dir: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((p) => cmdline(p).includes(dir));
}

const autogroup = existsSync('/proc/self/autogroup');

describe('warm spares', { skip: noSandbox }, () => {
  let f: InternFixture;
  let uidOf: (id: string) => string;

  async function shell(id: string, cmd: string, session?: string): Promise<string> {
    const r = await f.chat(id, user(`/shell ${cmd}`, session ? { session_id: session } : {}));
    assert.equal(r.status, 200, r.text);
    const out = text(r);
    assert.match(out, /^shell: /, out);
    return out.slice('shell: '.length);
  }

  before(async () => {
    f = await startInternFixture({ onDisk: true, env: ENV });
    uidOf = (id) => {
      const claims = join(f.gw.dataDir, 'run', 'uids');
      return readdirSync(claims).find((u) => read(join(claims, u)) === id)!;
    };
  });
  after(() => f.close());

  test('a provision takes the waiting spare: the intern runs in it as its own uid, without capabilities, at nice 10, on its own disk', async () => {
    const spare = await spareWaiting(f.gw);
    // A waiting spare is below every intern, and so is its sandbox's session group (with
    // autogroup, what weighs against other sessions); where the machine starved its start, the
    // pool marked it and raised it to an intern's priority (the agent's threads then depend on when
    // it started).
    const waiting = daemonAndAgent(Number(read(join(spare, 'pid'))));
    const groupNice = (pid: number) => /nice (-?\d+)/.exec(read(`/proc/${pid}/autogroup`))![1];
    if (existsSync(join(spare, 'starved'))) {
      assert.deepEqual(threadNices(waiting.daemon), [10]);
      if (autogroup) assert.deepEqual([groupNice(waiting.daemon), groupNice(waiting.agent)], ['10', '10']);
    } else {
      assert.deepEqual([threadNices(waiting.daemon), threadNices(waiting.agent)], [[19], [19]]);
      if (autogroup) assert.deepEqual([groupNice(waiting.daemon), groupNice(waiting.agent)], ['19', '19']);
    }
    const id = await f.intern('spare-a');
    const row = await getInternById(f.gw.ctx.store.db, id);
    assert.ok(cmdline(row!.daemonPid!).includes(spare), 'the launcher is the spare one');
    assert.equal(row!.hostname, `unix:${join(spare, 'run', 'd.sock')}`);
    assert.equal(read(join(f.gw.dataDir, 'interns', id, 'spare')), spare);

    const out = await shell(
      id,
      "id -u; id -g; grep -E '^(CapEff|CapPrm|CapAmb|NoNewPrivs)' /proc/self/status; cut -d' ' -f19 /proc/self/stat; pwd; echo mine > a.txt; ls /intern" +
        // the agent's group during the first turn: the claim raised it to a cold start's (the
        // command's parent is the bubblewrap that confines it, whose parent is the agent)
        (autogroup ? "; sed 's/.* nice //' /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/autogroup" : ''),
    );
    const uid = uidOf(id);
    assert.equal(
      out,
      [
        uid,
        uid,
        'CapPrm:\t0000000000000000',
        'CapEff:\t0000000000000000',
        'CapAmb:\t0000000000000000',
        'NoNewPrivs:\t1',
        '10',
        '/intern/work',
        'agent',
        'daemon',
        'home',
        'work',
        ...(autogroup ? ['0'] : []),
        '[exit 0]',
      ].join('\n'),
    );
    // The agent the spare started as root is the intern's uid in every id, without capabilities.
    const { daemon, agent } = daemonAndAgent(row!.daemonPid!);
    // Should the intern go to sleep before this look, the message shows the processes there were.
    const tree = (p: number, depth = 0): string =>
      `\n${' '.repeat(depth)}${p} ${cmdline(p).slice(0, 100)}${children(p)
        .map((c) => tree(c, depth + 1))
        .join('')}`;
    assert.ok(agent, `the agent runs under the daemon ${daemon}: ${tree(row!.daemonPid!)}`);
    // Raised for its first turn, lowered to the intern's priority once it ended (the daemon lowers
    // itself as the run ends, which may be a moment after the stream's last byte).
    const nices = () => JSON.stringify([threadNices(daemon), threadNices(agent)]);
    assert.equal(
      await waitForValue('the daemon and the agent are lowered', nices, (n) => n === '[[10],[10]]'),
      '[[10],[10]]',
    );
    if (autogroup) {
      await waitForValue(
        "the daemon's group is lowered",
        () => groupNice(daemon),
        (n) => n === '10',
      );
      assert.deepEqual([groupNice(daemon), groupNice(agent)], ['10', '10']);
    }
    assert.equal(status(agent, 'Uid'), `${uid}\t${uid}\t${uid}\t${uid}`);
    assert.equal(status(agent, 'Gid'), `${uid}\t${uid}\t${uid}\t${uid}`);
    assert.equal(status(agent, 'Groups'), '');
    assert.equal(status(agent, 'CapEff'), '0000000000000000');
    assert.equal(status(agent, 'CapPrm'), '0000000000000000');
  });

  test("the intern's shell cannot reach the daemon's memory, another spare, or the gateway's files", async () => {
    const id = await f.intern('spare-b');
    const out = await shell(
      id,
      [
        'cat /proc/1/environ >/dev/null 2>&1 && echo environ-read || echo environ-denied',
        'ls /run/cohort >/dev/null 2>&1 && echo run-listed || echo run-denied',
        `ls ${f.gw.dataDir} >/dev/null 2>&1 && echo data-seen || echo data-unseen`,
        `ls ${sparesDir(f.gw)} >/dev/null 2>&1 && echo spares-seen || echo spares-unseen`,
        'ls /intern/daemon >/dev/null 2>&1 && echo daemon-listed || echo daemon-denied',
      ].join('; '),
    );
    assert.equal(
      out,
      ['environ-denied', 'run-denied', 'data-unseen', 'spares-unseen', 'daemon-denied', '[exit 0]'].join('\n'),
    );
  });

  test('a sleeping intern wakes in the next spare with its files and sessions; another intern never sees them', async () => {
    const id = await f.intern('spare-c');
    assert.equal(await shell(id, 'echo c-private > c.txt && echo written', 'kept'), 'written\n[exit 0]');
    await asleep(f.gw, id);
    const spare = await spareWaiting(f.gw);
    assert.equal(await shell(id, 'cat c.txt', 'kept'), 'c-private\n[exit 0]');
    const row = await getInternById(f.gw.ctx.store.db, id);
    assert.ok(cmdline(row!.daemonPid!).includes(spare), 'woken in the spare that was waiting');
    // The session continued from disk: the agent sent the model the earlier exchange.
    const again = await f.chat(id, user('/say hi', { session_id: 'kept' }));
    const fresh = await f.chat(id, user('/say hi', { session_id: 'new' }));
    assert.ok(again.chunks.at(-1).usage.prompt_tokens > fresh.chunks.at(-1).usage.prompt_tokens);

    const other = await f.intern('spare-d');
    assert.equal(
      await shell(other, 'cat /intern/work/c.txt 2>&1; test -e /intern/work/c.txt && echo seen || echo unseen'),
      'cat: /intern/work/c.txt: No such file or directory\nunseen\n[exit 0]',
    );
  });

  test("suspend and delete stop a spare-started intern, remove its spare's directory and keep its log", async () => {
    await spareWaiting(f.gw);
    const id = await f.intern('spare-e');
    const spare = read(join(f.gw.dataDir, 'interns', id, 'spare'));
    assert.ok(spare.startsWith(sparesDir(f.gw)), spare);
    assert.notDeepEqual(processesNaming(spare), []);
    const suspended = await f.gw.call('POST', `/interns/${id}/suspend`);
    assert.deepEqual([suspended.status, suspended.body], [200, { suspended: true }]);
    assert.deepEqual(processesNaming(spare), []);
    assert.equal(existsSync(spare), false);
    assert.equal(existsSync(join(f.gw.dataDir, 'interns', id, 'spare')), false);
    assert.match(
      read(join(f.gw.dataDir, 'interns', id, 'daemon.log')),
      /\{"listening":"unix:\/run\/cohort\/d\.sock"\}/,
    );

    await spareWaiting(f.gw);
    const provisioned = await f.gw.call('POST', `/interns/${id}/provision`);
    assert.equal(provisioned.status, 202);
    await f.gw.ctx.interns.idle();
    const again = read(join(f.gw.dataDir, 'interns', id, 'spare'));
    assert.ok(again && again !== spare, 'provisioned again in the next spare');
    const deleted = await f.gw.call('DELETE', `/interns/${id}`);
    assert.deepEqual([deleted.status, deleted.body], [202, { deleting: true }]);
    await f.gw.ctx.interns.idle();
    await waitFor('nothing of the spare is left', () => !processesNaming(again).length && !existsSync(again));
    assert.deepEqual(processesNaming(again), []);
    assert.equal(existsSync(again), false);
  });

  test('a closing gateway stops the spares it did not hand out; the next one sweeps those a dead gateway left', async () => {
    const gw = await startTestGateway({ env: { COHORT_WARM_SPARES: '2' } });
    let first = '';
    try {
      first = await spareWaiting(gw);
      const pid = Number(read(join(first, 'pid')));
      assert.ok(pid > 0 && processesNaming(first).includes(pid));
    } finally {
      await gw.close();
    }
    assert.deepEqual(processesNaming(first), []);
    assert.deepEqual(existsSync(sparesDir(gw)) ? readdirSync(sparesDir(gw)) : [], []);

    // What a gateway that died leaves: a spare whose owner is gone and whose launcher still runs.
    const dataDir = mkdtempSync(join(tmpdir(), 'cohort-test-'));
    const left = join(dataDir, 'run', 'spares', 'left');
    mkdirSync(left, { recursive: true });
    const stray = spawn('/bin/sh', ['-c', 'sleep 60', left], { detached: true, stdio: 'ignore' });
    writeFileSync(join(left, 'owner'), String(spawnSync('/bin/true').pid));
    writeFileSync(join(left, 'pid'), String(stray.pid));
    // (its `sleep`, forked, names the directory too until it execs)
    assert.ok(processesNaming(left).includes(stray.pid!));
    const next = await startTestGateway({ dataDir, env: { COHORT_WARM_SPARES: '1' } });
    try {
      await waitFor("the dead gateway's spare is swept", () => !existsSync(left));
      assert.equal(existsSync(left), false);
      assert.deepEqual(processesNaming(left), []);
    } finally {
      stray.kill('SIGKILL');
      await next.close();
    }
  });
});
