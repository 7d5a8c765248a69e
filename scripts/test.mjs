// Runs every *.test.ts under src/ and console/ with node's test runner (Node 20 has no glob for --test).
// Extra arguments are passed through, e.g. `npm test -- --test-name-pattern=workspace`.
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
const files = args.some((a) => !a.startsWith('-')) ? [] : [...find('src'), ...find('console')].sort();
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', ...args, ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
