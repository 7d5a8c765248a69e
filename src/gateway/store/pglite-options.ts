// PGlite's settings and loading, shared by the gateway and the child that creates a data dir.
// PostgreSQL's default 128 MB buffer cache lives inside the WebAssembly heap, where it stays
// resident for the life of the process (PostgreSQL touches all of it at start); 4 MB (512
// pages) holds this schema's hot pages many times over, and the OS page cache the rest. PGlite
// serves one connection, so the shared structures sized by max_connections are cut from 100
// connections' worth to 4 (about 4 MB less of its heap resident); the lock table keeps 256
// slots, far more than the largest migration takes. Its WebAssembly runs on V8's default
// dynamic tiering (only hot functions reach the optimizing tier): the request log's COPY, paid
// on every model request, takes about a third less of the database thread's time than on the
// baseline tier alone, for some 55 MB more resident (docs/performance-log.md).
import type { PGliteOptions } from '@electric-sql/pglite';

export const PGLITE_OPTIONS: PGliteOptions = {
  postgresqlconf: ['shared_buffers=4MB', 'max_connections=4'],
};

export const loadPglite = (): Promise<typeof import('@electric-sql/pglite')> => import('@electric-sql/pglite');
