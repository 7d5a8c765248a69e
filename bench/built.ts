// The benchmarks measure what `npm start` runs: the compiled dist/ (built here when stale).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BUILT_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

export function ensureBuilt(): void {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('../scripts/build.mjs', import.meta.url)), '--if-stale'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('the build failed');
}
