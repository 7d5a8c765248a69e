// PGlite's settings, shared by the gateway and the child that creates a data dir. PostgreSQL's
// default 128 MB buffer cache lives inside the WebAssembly heap, where it stays resident for
// the life of the process; 16 MB holds this schema's hot pages, and the OS page cache the rest.
import type { PGliteOptions } from '@electric-sql/pglite';

export const PGLITE_OPTIONS: PGliteOptions = { postgresqlconf: ['shared_buffers=16MB'] };
