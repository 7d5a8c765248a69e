import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startInternFixture } from './test/helpers/interns.ts';
const run = promisify(execFile);
const ms = async (f: () => unknown) => { const t = performance.now(); await f(); return Math.round(performance.now() - t); };
const f = await startInternFixture({ onDisk: true, env: { COHORT_INTERN_DISK_MB: '2048' } });
const id = await f.intern('ab');
const header = `authorization: Bearer ${f.gw.keys.api_key}`;
const modes = (process.env.MODES ?? 'a,b').split(',');
const res: Record<string, number[]> = Object.fromEntries(modes.map((m) => [m, []]));
for (let i = 0; i < Number(process.env.N ?? 8); i++) {
  for (const m of i % 2 ? [...modes].reverse() : modes) {
    (globalThis as any).__mode = m;
    (globalThis as any).__nice = m === 'b';
    await run('sync');
    res[m]!.push(await ms(() => run('curl', ['-sS', '-f', '-o', '/dev/null', '-H', 'expect:', '-H', header, '-T', '/tmp/tb/folder.tar', `${f.gw.url}/interns/${id}/files/${m}${i}?format=tar`])));
    await run('rm', ['-rf', `/tmp/nothing`]);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const m of modes) console.log(m, 'median', med(res[m]!), res[m]!.join(' '));
await f.close();
