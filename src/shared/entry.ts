// How one of our programs starts another as a child process or a worker thread. Built (dist/,
// .js) it is plain node on the sibling .js; from source (tests, development, .ts) node with the
// tsx loader, which is resolved from here because the child may run in a directory of its own.
// May import: node only; shared by the gateway, the store, the daemon and the provisioner.
import { existsSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startupSnapshot } from 'node:v8';
import { Worker } from 'node:worker_threads';

/** Node arguments that run `relative` (no extension, e.g. '../daemon/main') next to the module at `from` (its import.meta.url). */
export function nodeArgsFor(from: string, relative: string): string[] {
  const ext = extname(fileURLToPath(from));
  const file = fileURLToPath(new URL(`${relative}${ext}`, from));
  return ext === '.ts' ? ['--import', import.meta.resolve('tsx'), file] : [file];
}

/** The V8 startup snapshot the build made of a program (dist/…/main.js → main.<node>-<arch>.blob):
 * named for the Node that made it, since only that Node can load it. */
export const snapshotOf = (file: string): string => file.replace(/\.js$/, `.${process.version}-${process.arch}.blob`);

/** As nodeArgsFor, for a program that is started often (the daemon and the agent, once per wake):
 * from its startup snapshot where the build made one for this Node, so its modules need not load.
 * Its own arguments go after these (the `--` ends Node's options). */
export function startArgsFor(from: string, relative: string): string[] {
  const args = nodeArgsFor(from, relative);
  const blob = args.length === 1 ? snapshotOf(args[0]!) : '';
  return blob && existsSync(blob) ? ['--snapshot-blob', blob, '--'] : args;
}

/** The main function of a program made into a startup snapshot (scripts/build.mjs bundles its
 * snapshot.ts): a process started from the snapshot learns where it lives, then runs; a failure
 * is one line on stderr and exit 1. */
export function runFromSnapshot(program: string, run: () => Promise<void>): void {
  startupSnapshot.setDeserializeMainFunction(() => {
    adoptSnapshotLocation();
    run().catch((err: unknown) => {
      process.stderr.write(`cohort ${program}: ${(err as Error).message}\n`);
      process.exit(1);
    });
  });
}

/** The URL the bundle's modules see as `import.meta.url` (the build defines it as this global):
 * main.js beside the blob. */
function adoptSnapshotLocation(): void {
  const i = process.execArgv.indexOf('--snapshot-blob');
  const blob = process.execArgv[i + 1];
  if (i < 0 || !blob) throw new Error('not started from a snapshot');
  (globalThis as { __cohortModuleUrl?: string }).__cohortModuleUrl = pathToFileURL(
    join(dirname(resolve(blob)), 'main.js'),
  ).href;
}

/** A worker thread running `relative` next to the module at `from`. From source the worker
 * registers tsx itself: Node 20 does not carry `--import` loaders into workers. */
export function startWorker(from: string, relative: string, workerData: unknown): Worker {
  const args = nodeArgsFor(from, relative);
  const file = args.at(-1)!;
  // A small young generation: the worker's allocations are short-lived buffers.
  const opts = { workerData, resourceLimits: { maxYoungGenerationSizeMb: 4 } };
  if (args.length === 1) return new Worker(file, opts);
  const code = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(pathToFileURL(file).href)}); })`;
  return new Worker(code, { ...opts, eval: true });
}
