// Compiles src/ to dist/ (what `npm start` runs): plain JavaScript, so the gateway and every
// daemon and agent it starts run without a TypeScript loader, which holds some 80 MB per process.
// Also builds the web console (console/build.mjs) into dist/console/.
// `--if-stale` builds only when a source file is newer than the last build (npm start runs that).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.built');

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

if (process.argv.includes('--if-stale') && existsSync(stamp) && statSync(stamp).mtimeMs >= Math.max(newest(join(root, 'src')), newest(join(root, 'console')), statSync(join(root, 'tsconfig.build.json')).mtimeMs)) {
  process.exit(0);
}
process.stderr.write('cohort: building dist/ from src/ …\n');
const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
const migrations = join(root, 'dist', 'store', 'migrations');
mkdirSync(migrations, { recursive: true });
cpSync(join(root, 'src', 'store', 'migrations'), migrations, { recursive: true, filter: (src) => !src.endsWith('.ts') });
const { buildConsole } = await import('../console/build.mjs');
await buildConsole();
writeFileSync(stamp, new Date().toISOString() + '\n');
