// Each case runs in a child process: a lowered priority cannot be raised again without privileges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { getPriority } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';

const module = new URL('./priority.ts', import.meta.url).href;
const start = getPriority();

/** Runs `body` in a child with the module imported as `p`; returns its printed JSON. `session`:
 * the child leads a session (an autogroup) of its own, as an intern's sandbox does. In the child,
 * `until(ok)` polls `ok` until it holds or 10 s pass (what is printed then shows what went wrong). */
function child(body: string, { session = false } = {}): unknown {
  const code = `
    import * as p from ${JSON.stringify(module)};
    import { readdirSync, readFileSync } from 'node:fs';
    const nices = () => readdirSync('/proc/self/task').map((t) => {
      const s = readFileSync('/proc/self/task/' + t + '/stat', 'utf8');
      return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[16]);
    });
    const until = async (ok) => {
      for (const end = Date.now() + 10_000; !ok() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    };
    ${body}`;
  const argv = [process.execPath, '--import', 'tsx', '--input-type=module', '-e', code];
  const [file, ...args] = session ? ['/usr/bin/setsid', '--wait', ...argv] : argv;
  const r = spawnSync(file!, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('lowerPriority lowers every thread of the process, not only the calling one', () => {
  const out = child(`
    const before = nices();
    p.lowerPriority(${start + 3});
    console.log(JSON.stringify({ threads: before.length, before: [...new Set(before)], after: [...new Set(nices())] }));
  `) as { threads: number; before: number[]; after: number[] };
  assert.ok(out.threads > 1, `node runs several threads: ${out.threads}`);
  assert.deepEqual(out.before, [start]);
  assert.deepEqual(out.after, [start + 3]);
});

test('lowerPriority never raises a priority already lower', () => {
  const out = child(`
    p.lowerPriority(${start + 5});
    p.lowerPriority(${start + 2});
    console.log(JSON.stringify([...new Set(nices())]));
  `);
  assert.deepEqual(out, [start + 5]);
});

test('lowerPriorityLater: at the first call, once; or when its time passes; never without a nice', async () => {
  const out = child(`
    const now = p.lowerPriorityLater(${start + 2}, { afterMs: 60_000 });
    const before = [...new Set(nices())];
    now();
    const after = [...new Set(nices())];
    p.lowerPriorityLater(${start + 4}, { afterMs: 30 });
    const unset = p.lowerPriorityLater(undefined, { afterMs: 1 });
    unset();
    await until(() => nices().every((n) => n === ${start + 4}));
    console.log(JSON.stringify({ before, after, timed: [...new Set(nices())] }));
  `);
  assert.deepEqual(out, { before: [start], after: [start + 2], timed: [start + 4] });
});

const skip = existsSync('/proc/self/autogroup') ? false : 'this kernel schedules without autogroup';
/** `/autogroup-<id> nice <n>` → [id, n]. The kernel prints nothing for the default group, which
 * the processes of init's session share (where CI's runner may be): that is [0, 0]. */
const group = (line: string) => {
  if (line === '') return [0, 0];
  const m = /^\/autogroup-(\d+) nice (-?\d+)/.exec(line);
  assert.ok(m, `an autogroup line: ${JSON.stringify(line)}`);
  return m.slice(1).map(Number);
};

test("setGroupPriority sets its own session's group, not its parent's; lowerPriorityLater({ group }) lowers it with the threads", {
  skip,
}, () => {
  const mine = readFileSync('/proc/self/autogroup', 'utf8');
  const out = child(
    `
    const read = () => readFileSync('/proc/self/autogroup', 'utf8');
    const before = read();
    const set = await p.setGroupPriority(7);
    const after = read();
    p.lowerPriorityLater(${start + 4}, { group: true })();
    const niceNow = () => Number(/ nice (-?\\d+)/.exec(read())?.[1]);
    await until(() => niceNow() === ${start + 4});
    console.log(JSON.stringify({ set, before, after, lowered: read(), threads: [...new Set(nices())] }));
  `,
    { session: true },
  ) as { set: boolean; before: string; after: string; lowered: string; threads: number[] };
  const [id, nice] = group(out.before);
  assert.ok(id! > 0, `the child's session is a group: ${JSON.stringify(out.before)}`);
  assert.notEqual(id, group(mine)[0], 'the child has a group of its own');
  assert.equal(nice, 0, 'a new session starts at nice 0, whatever its creator');
  assert.equal(out.set, true);
  assert.deepEqual(group(out.after), [id, 7]);
  assert.deepEqual(group(out.lowered), [id, start + 4]);
  assert.deepEqual(out.threads, [start + 4]);
  assert.equal(readFileSync('/proc/self/autogroup', 'utf8'), mine);
});

test("groupLikeMe gives a command in a session of its own the caller's priority, and nothing above it", {
  skip,
}, () => {
  const out = child(`
    const { spawn } = await import('node:child_process');
    const started = () => spawn('/bin/sleep', ['2'], { detached: true, stdio: 'ignore' });
    const read = (pid) => readFileSync('/proc/' + pid + '/autogroup', 'utf8');
    const atStart = started();
    p.groupLikeMe(atStart.pid);
    p.lowerPriority(${start + 3});
    const lowered = started();
    p.groupLikeMe(lowered.pid);
    const niceOf = (pid) => Number(/ nice (-?\\d+)/.exec(read(pid))?.[1]);
    await until(() => niceOf(atStart.pid) === ${Math.max(0, start)} && niceOf(lowered.pid) === ${start + 3});
    console.log(JSON.stringify({ atStart: read(atStart.pid), lowered: read(lowered.pid) }));
    atStart.kill();
    lowered.kill();
  `) as { atStart: string; lowered: string };
  assert.equal(group(out.atStart)[1], Math.max(0, start));
  assert.equal(group(out.lowered)[1], start + 3);
});
