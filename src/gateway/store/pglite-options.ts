// PGlite's settings and loading, shared by the gateway and the child that creates a data dir.
// PostgreSQL's default 128 MB buffer cache lives inside the WebAssembly heap, where it stays
// resident for the life of the process (PostgreSQL touches all of it at start); 4 MB (512
// pages) holds this schema's hot pages many times over, and the OS page cache the rest. V8's
// optimizing tier compiles PostgreSQL's hot WebAssembly a second time and keeps about 95 MB
// more resident for it, while queries here run no slower on the baseline tier alone (PGlite's
// time goes to copying between JavaScript and its heap), so the process runs WebAssembly on the
// baseline tier: PGlite is the only WebAssembly the gateway loads. PGlite serves one connection,
// so the shared structures sized by max_connections are cut from 100 connections' worth to 4
// (about 4 MB less of its heap resident); the lock table keeps 256 slots, far more than the
// largest migration takes.
import { setFlagsFromString } from 'node:v8';
import type { PGliteOptions } from '@electric-sql/pglite';

export const PGLITE_OPTIONS: PGliteOptions = {
  postgresqlconf: ['shared_buffers=4MB', 'max_connections=4'],
};

/** Imports PGlite after setting the WebAssembly tier: the flag holds for modules compiled after it. */
export async function loadPglite(): Promise<typeof import('@electric-sql/pglite')> {
  setFlagsFromString('--liftoff-only');
  return import('@electric-sql/pglite');
}
