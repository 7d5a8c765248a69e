// Runs every *.test.ts under src/ and console/ (unit tests, beside their modules) and test/ (end-to-end scenarios) with node's test runner (Node 20 has no glob for --test).
// Extra arguments are passed through, e.g. `npm test -- --test-name-pattern=workspace`; the whole
// suite (no file arguments) is preceded by `biome ci` (format and lint) and the type check.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return find(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const args = process.argv.slice(2);
const whole = !args.some((a) => !a.startsWith('-'));
// The whole suite starts with the formatter and linter (Biome, biome.json): a tree that is not
// formatted, or that breaks a lint rule, fails here in seconds rather than in review.
if (whole) {
  const biome = spawnSync(process.execPath, ['node_modules/@biomejs/biome/bin/biome', 'ci', '.'], { stdio: 'inherit' });
  if (biome.status !== 0) process.exit(biome.status ?? 1);
  // Then the type check of everything the project ships and runs: src, test, bench, scripts and
  // bin (tsconfig.json), and the console (its own tsconfig): CI otherwise ran tests that a type
  // error in a helper or a benchmark would not stop.
  const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
  for (const project of ['tsconfig.json', 'console/tsconfig.json']) {
    const checked = spawnSync(process.execPath, [tsc, '--noEmit', '-p', project], { stdio: 'inherit' });
    if (checked.status !== 0) process.exit(checked.status ?? 1);
  }
}
const files = whole ? [...find('src'), ...find('console'), ...find('test')].sort() : [];
// A file (or a test) that hangs fails after ten minutes, its process killed, naming itself: one
// that hung once held CI to its 90 minutes and told nothing. The longest file takes under three.
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...args, ...files],
  {
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);
