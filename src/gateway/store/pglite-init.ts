// Creates a PGlite data dir and exits: run as a child process by db.ts, because initdb's
// WebAssembly instance leaves some 450 MB resident in the process that ran it.
// Usage: node [loader flags] pglite-init.(ts|js) DIR
import { loadPglite, PGLITE_OPTIONS } from './pglite-options.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: pglite-init DIR');
const { PGlite } = await loadPglite();
const db = new PGlite(dir, PGLITE_OPTIONS);
await db.waitReady;
await db.close();
