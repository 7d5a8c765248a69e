// How one of our programs starts another as a child process. Built (dist/, .js) it is plain
// node on the sibling .js; from source (tests, development, .ts) node with the tsx loader, which
// is resolved from here because the child may run in a directory of its own.
// May import: node only; shared by the gateway, the store, the daemon and the provisioner.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Node arguments that run `relative` (no extension, e.g. '../daemon/main') next to the module at `from` (its import.meta.url). */
export function nodeArgsFor(from: string, relative: string): string[] {
  const ext = extname(fileURLToPath(from));
  const file = fileURLToPath(new URL(`${relative}${ext}`, from));
  return ext === '.ts' ? ['--import', import.meta.resolve('tsx'), file] : [file];
}
