// Each case runs in a child process: a lowered priority cannot be raised again without privileges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { getPriority } from 'node:os';

const module = new URL('./priority.ts', import.meta.url).href;
const start = getPriority();

/** Runs `body` in a child with the module imported as `p`; returns its printed JSON. */
function child(body: string): unknown {
  const code = `
    import * as p from ${JSON.stringify(module)};
    import { readdirSync, readFileSync } from 'node:fs';
    const nices = () => readdirSync('/proc/self/task').map((t) => {
      const s = readFileSync('/proc/self/task/' + t + '/stat', 'utf8');
      return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[16]);
    });
    ${body}`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
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
    const now = p.lowerPriorityLater(${start + 2}, 60_000);
    const before = [...new Set(nices())];
    now();
    const after = [...new Set(nices())];
    p.lowerPriorityLater(${start + 4}, 30);
    const unset = p.lowerPriorityLater(undefined, 1);
    unset();
    await new Promise((r) => setTimeout(r, 200));
    console.log(JSON.stringify({ before, after, timed: [...new Set(nices())] }));
  `);
  assert.deepEqual(out, { before: [start], after: [start + 2], timed: [start + 4] });
});
