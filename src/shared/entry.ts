// How one of our programs starts another as a child process or a worker thread. Built (dist/,
// .js) it is plain node on the sibling .js; from source (tests, development, .ts) node with the
// tsx loader, which is resolved from here because the child may run in a directory of its own.
// May import: node only; shared by the gateway, the store, the daemon and the provisioner.
import { extname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Node arguments that run `relative` (no extension, e.g. '../daemon/main') next to the module at `from` (its import.meta.url). */
export function nodeArgsFor(from: string, relative: string): string[] {
  const ext = extname(fileURLToPath(from));
  const file = fileURLToPath(new URL(`${relative}${ext}`, from));
  return ext === '.ts' ? ['--import', import.meta.resolve('tsx'), file] : [file];
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
