// Compiles src/ to dist/ (what `npm start` runs): plain JavaScript, so the gateway and every
// daemon and agent it starts run without a TypeScript loader, which holds some 80 MB per process.
// Also builds the web console (console/build.mjs) into dist/console/.
// `--if-stale` builds only when a source file is newer than the last build (npm start runs that).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

if (
  process.argv.includes('--if-stale') &&
  existsSync(stamp) &&
  statSync(stamp).mtimeMs >=
    Math.max(
      newest(join(root, 'src')),
      newest(join(root, 'console')),
      statSync(join(root, 'tsconfig.build.json')).mtimeMs,
    )
) {
  process.exit(0);
}
process.stderr.write('cohort: building dist/ from src/ …\n');
// A clean build: a module moved or deleted in src/ must not live on in dist/.
rmSync(join(root, 'dist'), { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
const migrations = join(root, 'dist', 'gateway', 'store', 'migrations');
mkdirSync(migrations, { recursive: true });
cpSync(join(root, 'src', 'gateway', 'store', 'migrations'), migrations, {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
// The process helper (src/shared/spawner.ts) is plain JavaScript, run as it is.
cpSync(join(root, 'src', 'shared', 'spawner-child.mjs'), join(root, 'dist', 'shared', 'spawner-child.mjs'));
cpSync(
  join(root, 'src', 'gateway', 'interns', 'provisioner', 'files-op.mjs'),
  join(root, 'dist', 'gateway', 'interns', 'provisioner', 'files-op.mjs'),
);
// The intern runtime's launcher scripts (src/runtime/sandbox/intern.ts reads them beside itself).
cpSync(join(root, 'src', 'runtime', 'sandbox', 'scripts'), join(root, 'dist', 'runtime', 'sandbox', 'scripts'), {
  recursive: true,
});
// The daemon and the agent start once per intern wake: each becomes one file, so a start reads
// one module instead of some three hundred (docs/fleet.md measures it).
const { build } = await import('esbuild');
for (const entry of ['runtime/daemon/main.js', 'runtime/agent/main.js']) {
  const file = join(root, 'dist', entry);
  await build({
    entryPoints: [file],
    outfile: file,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
    // CommonJS packages inside (pino) call require; an ES module has none of its own.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  });
}
// Each also becomes a V8 startup snapshot: its modules loaded and evaluated here, once, so a start
// deserializes them (some 80 ms less per process on a wake; docs/fleet.md). Only the Node that made
// a snapshot can load it, hence the version in its name; where none can be made the programs
// start from main.js as before (src/shared/entry.ts, startArgsFor, whose naming rule this uses).
const { snapshotOf } = await import(pathToFileURL(join(root, 'dist', 'shared', 'entry.js')).href);
for (const name of ['daemon', 'agent']) {
  const dir = join(root, 'dist', 'runtime', name);
  const entry = join(dir, 'snapshot.cjs');
  rmSync(join(dir, 'snapshot.js'), { force: true });
  rmSync(join(dir, 'snapshot.js.map'), { force: true });
  await build({
    entryPoints: [join(root, 'src', 'runtime', name, 'snapshot.ts')],
    outfile: entry,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
    // The bundle's modules learn where they live when a process starts (runFromSnapshot in src/shared/entry.ts).
    define: { 'import.meta.url': 'globalThis.__cohortModuleUrl' },
    logOverride: { 'empty-import-meta': 'silent' },
  });
  const blob = snapshotOf(join(dir, 'main.js'));
  const made = spawnSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', entry], {
    cwd: dir,
    env: { PATH: process.env.PATH },
    encoding: 'utf8',
  });
  rmSync(entry);
  if (made.status !== 0) {
    rmSync(blob, { force: true });
    process.stderr.write(`cohort: no startup snapshot of the ${name} (it starts from main.js): ${made.stderr}\n`);
    continue;
  }
  // Node caches random bytes for randomUUID and randomInt: a cache filled while the snapshot was
  // made would hand every process the same ids. Two processes must draw different ones.
  const probe = join(dir, 'probe.cjs');
  writeFileSync(
    probe,
    "const c = require('node:crypto'); console.log(c.randomUUID(), c.randomInt(2 ** 47)); process.exit(0);",
  );
  const draw = () =>
    spawnSync(process.execPath, ['--snapshot-blob', blob, '--require', probe], { encoding: 'utf8' }).stdout.trim();
  const [a, b] = [draw(), draw()];
  rmSync(probe);
  if (!a || a === b) {
    rmSync(blob, { force: true });
    process.stderr.write(
      `cohort: the ${name}'s startup snapshot repeats random ids in every process ("${a}"); something draws them at load time\n`,
    );
    process.exit(1);
  }
}
const { buildConsole } = await import('../console/build.mjs');
await buildConsole();
writeFileSync(stamp, new Date().toISOString() + '\n');
