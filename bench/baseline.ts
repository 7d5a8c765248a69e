// An earlier commit beside this checkout, for a benchmark that measures this build against it in
// one run (BENCH_BASELINE=<commit>): its tree (git archive, so nothing is registered in this
// repository) in the system's temporary folder, sharing this checkout's node_modules, built on
// request. Kept between runs under its commit's hash.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../', import.meta.url));

/** The checkout of `rev`, with dist/ built when `build`; returns its root. */
export function baselineCheckout(rev: string, o: { build: boolean }): string {
  const sha = execFileSync('git', ['rev-parse', '--short=12', `${rev}^{commit}`], {
    cwd: REPO,
    encoding: 'utf8',
  }).trim();
  const dir = join(tmpdir(), `cohort-baseline-${sha}`);
  if (!existsSync(join(dir, 'package.json'))) {
    mkdirSync(dir, { recursive: true });
    const tree = execFileSync('git', ['archive', '--format=tar', sha], { cwd: REPO, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', dir], { input: tree });
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  }
  if (o.build && !existsSync(join(dir, 'dist', 'main.js')))
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' });
  return dir;
}
