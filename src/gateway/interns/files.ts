// An intern's work folder from outside (docs/guides/files.md): read a file or list a folder,
// write, delete, move, and a folder in or out as a tar stream; and the repositories an intern is
// given, with its work taken back. The service is assembled here from its parts, each of its own:
// - files-checks.ts: a request's path against the bounds, a folder upload's tar entries, and the
//   error for each refusal (pure, tested by table);
// - files-context.ts: the dependencies, the intern's view for a read or a change, one operation
//   run in it (provisioner/files-op.mjs, as the intern's uid: never this process following a path
//   the tenant controls), and the spool files bytes cross in;
// - files-ops.ts: a file or a listing read, a file written, removed, moved;
// - files-upload.ts: a folder's upload, its tar checked entry by entry as it is spooled, then
//   unpacked;
// - files-download.ts: a folder's download, read from GNU tar as it writes it, and how any
//   download goes to its client;
// - files-repositories.ts: repositories cloned, placed, diffed and pushed (repositories.ts does
//   the gateway's git).
// May import: its parts above, repositories.ts (the pure checks), the store's interns, node built-ins.
import type { Readable } from 'node:stream';
import type { InternRow } from '../store/schema-interns.ts';
import type { FilesContext } from './files-context.ts';
import { downloadFolder, type TarDownload } from './files-download.ts';
import { movePath, readPath, removePath, writePath } from './files-ops.ts';
import {
  addRepositories,
  type ClonedSet,
  cloneRepositories,
  diffRepository,
  listRepositories,
  type PlacedRepository,
  placeRepositories,
  pushRepository,
  type RepositoryWork,
  type Workspace,
} from './files-repositories.ts';
import { checkRepositories } from './repositories.ts';
import type { Repository } from './repositories.schemas.ts';

export type Got =
  | { type: 'directory'; body: unknown }
  | { type: 'file'; stream: Readable; size: number }
  | { type: 'tar'; download: TarDownload };

export type InternFiles = {
  /** A file's bytes, a folder's listing, or (tar) a folder as a tar stream. */
  get(row: InternRow, path: string, o: { tar: boolean }): Promise<Got>;
  /** Writes the body to a file, or (tar) unpacks it into a folder. */
  put(
    row: InternRow,
    path: string,
    body: Readable | undefined,
    o: { tar: boolean; account: string; signal: AbortSignal },
  ): Promise<{ path: string; type: string; size?: number; created?: boolean }>;
  remove(
    row: InternRow,
    path: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<{ path: string; type: string }>;
  move(
    row: InternRow,
    from: string,
    to: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<{ from: string; to: string; type: string }>;
  /** Refuses repositories that cannot be cloned, naming `field` (pure checks, before anything is made). */
  checkRepositories(list: Repository[], field: string): void;
  /** Clones every repository first (a failure places none), then places each in its folder of the
   * work folder: into a running intern (woken if asleep), or (`created`) into the disk of an
   * intern never started, before its first start. */
  addRepositories(
    row: InternRow,
    list: Repository[],
    o: { account: string; signal: AbortSignal; created: boolean; field: string },
  ): Promise<PlacedRepository[]>;
  listRepositories(row: InternRow): Promise<PlacedRepository[]>;
  /** The intern's committed work in a repository against its base: taken as a bundle made in its
   * sandbox, checked in the gateway's own repository, and diffed there. */
  diff(
    row: InternRow,
    repoId: string,
    o: { account: string; signal: AbortSignal },
  ): Promise<RepositoryWork & { diff: string }>;
  /** The same work pushed to a new branch of the remote. */
  push(
    row: InternRow,
    repoId: string,
    o: { account: string; signal: AbortSignal; branch?: string },
  ): Promise<RepositoryWork & { branch: string }>;
  /** The first half of addRepositories: clones (a failure keeps none); `place` finishes it. */
  cloneRepositories(list: Repository[], field: string, access: Workspace): Promise<ClonedSet>;
  place(
    row: InternRow,
    set: ClonedSet,
    o: { account: string; signal: AbortSignal; created: boolean },
  ): Promise<PlacedRepository[]>;
};

export function createInternFiles(c: FilesContext): InternFiles {
  return {
    get: async (row, path, { tar }) =>
      tar ? { type: 'tar', download: await downloadFolder(c, { row, path }) } : readPath(c, { row, path }),
    put: (row, path, body, o) => writePath(c, { row, path, body, ...o }),
    remove: (row, path, o) => removePath(c, { row, path, ...o }),
    move: (row, from, to, o) => movePath(c, { row, from, to, ...o }),
    checkRepositories: (list, field) => checkRepositories(list, c.git.hosts, field),
    addRepositories: (row, list, o) => addRepositories(c, { row, list, ...o }),
    listRepositories: (row) => listRepositories(c, row),
    diff: (row, repoId, o) => diffRepository(c, { row, repoId, ...o }),
    push: (row, repoId, o) => pushRepository(c, { row, repoId, ...o }),
    cloneRepositories: (list, field, workspace) => cloneRepositories(c, { list, field, workspace }),
    place: (row, set, o) => placeRepositories(c, { row, set, ...o }),
  };
}
