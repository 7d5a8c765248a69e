// Intern records of an account: create (with the intern's own API key, sealed), read, list,
// update, and the mapping to the API shape. Secrets never leave this module unsealed except
// through `openSecrets`, which only the lifecycle and the chat relay call.
import { hostname } from 'node:os';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { and, count, desc, eq, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Principal } from '../access/identity-store.ts';
import { createKey } from '../access/identity-store.ts';
import { interns, type InternPower, type InternRow } from '../store/schema-interns.ts';
import { workspaces } from '../store/schema.ts';
import { powerProgress } from './power.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../store/errors.ts';
import type { Sealer } from '../crypto/seal.ts';
import { internNameTaken, invalidRequest, keyWorkspaceDeleted, resourceNotFound, tooManyInterns } from '../errors.ts';
import { isUuid } from '../http/common.schemas.ts';
import type { CreateIntern, Intern, ListInternsQuery, UpdateIntern } from './interns.schemas.ts';
import { DEFAULT_AGENT } from './agent-catalogue.ts';

export const internNotFound = () => resourceNotFound('intern');

/** The model of an intern without one of its own, in a workspace without a default text model. */
export const DEFAULT_INTERN_MODEL = 'local/scripted';

/** The workspace's default text model, which its interns without a model of their own run. */
export async function workspaceModel(db: Db, workspaceId: string): Promise<string | null> {
  const [ws] = await db
    .select({ m: workspaces.defaultTextModel })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));
  return ws?.m ?? null;
}

/** The host an intern's daemon runs on, never its address: a daemon in its sandbox listens on a
 * socket only the gateway reaches, and the record shows tenants no address to try. */
export function publicHostname(address: string | null): string | null {
  if (!address) return null;
  if (address.startsWith('unix:')) return hostname();
  try {
    return new URL(address).hostname;
  } catch {
    return null;
  }
}

/** `workspaceModel`: the intern's workspace's default text model, where it has no model of its own. */
export function toIntern(r: InternRow, workspaceModel: string | null): Intern {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    instructions: r.instructions,
    model: r.model,
    // What its model requests run on now (the inference router resolves it the same way).
    effective_model: r.model ?? workspaceModel ?? DEFAULT_INTERN_MODEL,
    agent: r.agent,
    status: r.status,
    // A sleeping intern is `running` to its clients (a chat wakes it); its power shows here.
    progress: r.progress ?? (r.status === 'running' ? powerProgress(r.power) : null),
    hostname: publicHostname(r.hostname),
    last_failure_message: r.lastFailureMessage,
    workspace_id: r.workspaceId,
    vault_id: r.vaultId,
    attached_vault_id: r.attachedVaultId,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/** The API shape of one intern, its workspace's default model read where it has none of its own. */
export async function internWithModel(db: Db, r: InternRow): Promise<Intern> {
  return toIntern(r, r.model ? null : await workspaceModel(db, r.workspaceId));
}

/** The key's workspace; a `workspace_id` given in a request must be that one. */
export function workspaceOf(p: Principal, given?: string): string {
  if (!p.workspaceId) throw keyWorkspaceDeleted('workspace_id');
  if (given !== undefined && given.toLowerCase() !== p.workspaceId)
    throw invalidRequest("workspace_id: must be the API key's workspace");
  return p.workspaceId;
}

export const secretBinding = { daemon: (id: string) => id, apiKey: (id: string) => `${id}:api-key` };

const bodyHash = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/** 409 when an account already has as many interns as the operator allows (each costs a runtime of its own). */
const accountFull = (max: number) => tooManyInterns(max);

export async function createIntern(
  db: Db,
  opts: { principal: Principal; sealer: Sealer; body: CreateIntern; idempotencyKey?: string; maxPerAccount?: number },
): Promise<{ row: InternRow; replayed: boolean }> {
  const { principal: p, body } = opts;
  const workspaceId = workspaceOf(p, body.workspace_id);
  // The workspace is part of the request: the same key and body through a key of another workspace
  // is another request (the prior intern is not visible there).
  const hash = bodyHash([workspaceId, body]);
  if (opts.idempotencyKey) {
    const [prior] = await db
      .select()
      .from(interns)
      .where(
        and(
          eq(interns.orgId, p.orgId),
          eq(interns.creatorUserId, p.userId),
          eq(interns.idempotencyKey, opts.idempotencyKey),
        ),
      );
    if (prior && prior.idempotencyHash !== hash)
      throw invalidRequest('Idempotency-Key: already used for a different request (another body or workspace)');
    if (prior) return { row: prior, replayed: true };
  }
  if (body.vault_id) {
    const [owner] = await db
      .select({ id: interns.id })
      .from(interns)
      .where(and(eq(interns.workspaceId, workspaceId), eq(interns.vaultId, body.vault_id.toLowerCase())));
    if (!owner) throw invalidRequest('vault_id: no intern in this workspace owns that vault');
  }
  const id = randomUUID();
  try {
    const row = await db.transaction(async (txn) => {
      const tx = txn as unknown as Db;
      if (opts.maxPerAccount !== undefined) {
        // One creation at a time per account, so concurrent creates cannot pass the count together.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${p.orgId}))`);
        const [{ n }] = (await tx.select({ n: count() }).from(interns).where(eq(interns.orgId, p.orgId))) as [
          { n: number },
        ];
        if (n >= opts.maxPerAccount) throw accountFull(opts.maxPerAccount);
      }
      const key = await createKey(tx, {
        orgId: p.orgId,
        creatorUserId: p.userId,
        kind: 'standard',
        name: `intern ${body.name}`,
        workspaceId,
      });
      const [r] = await tx
        .insert(interns)
        .values({
          id,
          orgId: p.orgId,
          workspaceId,
          creatorUserId: p.userId,
          name: body.name,
          description: body.description ?? null,
          instructions: body.instructions ?? null,
          model: body.model ?? null,
          agent: body.agent ?? DEFAULT_AGENT,
          vaultId: randomUUID(),
          attachedVaultId: body.vault_id?.toLowerCase() ?? null,
          sealedSecret: opts.sealer.seal(randomBytes(32).toString('base64url'), secretBinding.daemon(id)),
          apiKeyId: key.key.id,
          creatorKeyId: p.keyId,
          sealedApiKey: opts.sealer.seal(key.raw, secretBinding.apiKey(id)),
          idempotencyKey: opts.idempotencyKey ?? null,
          idempotencyHash: opts.idempotencyKey ? hash : null,
        })
        .returning();
      return r!;
    });
    return { row, replayed: false };
  } catch (err) {
    // The key's workspace was deleted after the key was resolved (a cached resolution, or a race).
    if (isForeignKeyViolation(err, 'workspace_id')) throw keyWorkspaceDeleted('workspace_id');
    if (isUniqueViolation(err, 'idempotency') && opts.idempotencyKey) return createIntern(db, opts);
    if (isUniqueViolation(err)) throw internNameTaken(body.name);
    throw err;
  }
}

/** An intern the key can see: same organization and the key's workspace. Others are indistinguishable from none. */
export async function findIntern(db: Db, opts: { principal: Principal; id: string }): Promise<InternRow> {
  if (!isUuid(opts.id) || !opts.principal.workspaceId) throw internNotFound();
  const [row] = await db
    .select()
    .from(interns)
    .where(
      and(
        eq(interns.id, opts.id.toLowerCase()),
        eq(interns.orgId, opts.principal.orgId),
        eq(interns.workspaceId, opts.principal.workspaceId),
      ),
    );
  if (!row) throw internNotFound();
  return row;
}

// Running interns as chat requests see them, per store: one SQL query less per turn. Transitions
// made by this process drop their entry at once; other gateways' show within two TTLs, because an
// entry just past its TTL still serves while one read refreshes it, so a steady stream of turns
// never waits on the database.
const RUNNING_TTL_MS = 1_000;
const RUNNING_MAX = 10_000;
type Entry = { row: InternRow; expires: number; refreshing: boolean };
const running = new WeakMap<Db, Map<string, Entry>>();
const runningOf = (db: Db) => running.get(db) ?? running.set(db, new Map()).get(db)!;
const forget = (db: Db, id: string) => void runningOf(db).delete(id);
/** Drops a cached running intern: its record is about to change. */
export const forgetRunning = forget;

function remember(cache: Map<string, Entry>, row: InternRow): void {
  if (row.status !== 'running') return void cache.delete(row.id);
  if (cache.size >= RUNNING_MAX) cache.delete(cache.keys().next().value!);
  cache.set(row.id, { row, expires: Date.now() + RUNNING_TTL_MS, refreshing: false });
}

/** findIntern for the chat route: a running intern may come from the short cache. */
export async function findInternForChat(db: Db, opts: { principal: Principal; id: string }): Promise<InternRow> {
  const cache = runningOf(db);
  const id = opts.id.toLowerCase();
  const hit = cache.get(id);
  const p = opts.principal;
  if (hit && hit.row.orgId === p.orgId && hit.row.workspaceId === p.workspaceId) {
    const now = Date.now();
    if (now < hit.expires) return hit.row;
    if (now < hit.expires + RUNNING_TTL_MS) {
      if (!hit.refreshing) {
        hit.refreshing = true;
        // A transition forgotten meanwhile (the entry replaced or gone) is not overwritten by this older read.
        findIntern(db, opts).then(
          (row) => cache.get(id) === hit && remember(cache, row),
          () => cache.get(id) === hit && cache.delete(id),
        );
      }
      return hit.row;
    }
  }
  const row = await findIntern(db, opts);
  remember(cache, row);
  return row;
}

export async function getInternById(db: Db, id: string): Promise<InternRow | null> {
  const [row] = await db.select().from(interns).where(eq(interns.id, id));
  return row ?? null;
}

const badCursor = () => invalidRequest('starting_after: not a cursor returned by this API');

function decodeCursor(c: string): { at: Date; id: string } {
  const [at, id] = Buffer.from(c, 'base64url').toString('utf8').split('|');
  const date = new Date(at ?? '');
  if (!id || !isUuid(id) || Number.isNaN(date.getTime())) throw badCursor();
  return { at: date, id };
}
const encodeCursor = (r: InternRow) => Buffer.from(`${r.createdAt.toISOString()}|${r.id}`).toString('base64url');

export async function listInterns(db: Db, opts: { principal: Principal; query: ListInternsQuery }) {
  const { query: q } = opts;
  const workspaceId = workspaceOf(opts.principal, q.workspace_id);
  const conds = [eq(interns.orgId, opts.principal.orgId), eq(interns.workspaceId, workspaceId)];
  if (q.status) conds.push(inArray(interns.status, q.status));
  if (q.starting_after) {
    const c = decodeCursor(q.starting_after);
    conds.push(or(lt(interns.createdAt, c.at), and(eq(interns.createdAt, c.at), lt(interns.id, c.id)))!);
  }
  const rows = await db
    .select()
    .from(interns)
    .where(and(...conds))
    .orderBy(desc(interns.createdAt), desc(interns.id))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  const model = page.some((r) => !r.model) ? await workspaceModel(db, workspaceId) : null;
  return {
    data: page.map((r) => toIntern(r, model)),
    has_more: hasMore,
    ...(hasMore ? { next_cursor: encodeCursor(page.at(-1)!) } : {}),
  };
}

export async function updateIntern(
  db: Db,
  opts: { principal: Principal; id: string; body: UpdateIntern },
): Promise<InternRow> {
  const current = await findIntern(db, opts);
  const b = opts.body;
  try {
    const [row] = await db
      .update(interns)
      .set({
        name: b.name,
        description: b.description,
        instructions: b.instructions,
        model: b.model,
        agent: b.agent,
        updatedAt: new Date(),
      })
      .where(eq(interns.id, current.id))
      .returning();
    if (!row) throw internNotFound();
    return row;
  } catch (err) {
    if (isUniqueViolation(err)) throw internNameTaken(b.name ?? current.name);
    throw err;
  }
}

export type InternPatch = Partial<
  Pick<InternRow, 'status' | 'progress' | 'hostname' | 'lastFailureMessage' | 'daemonPid' | 'power' | 'powerAt'>
>;

/** `lease_until` a lease from now, by the database's clock (gateways' clocks do not matter). */
export const leaseEnd = (ms: number) => sql`now() + ${ms} * interval '1 millisecond'`;

/** Lifecycle writes; `from` (and `power`, `powerAt`: the power state and its date as last read;
 * `leaseOwner`: the gateway holding the work, leases.ts) guard against racing another gateway's
 * transition. `lease` takes the work's lease for a gateway (null: ends it). */
export async function setInternState(
  db: Db,
  opts: {
    id: string;
    patch: InternPatch;
    from?: InternRow['status'][];
    hostname?: string;
    power?: InternPower[];
    powerAt?: Date | null;
    leaseOwner?: string;
    lease?: { owner: string; ms: number } | null;
  },
): Promise<InternRow | null> {
  forget(db, opts.id);
  const lease =
    opts.lease === undefined
      ? {}
      : opts.lease === null
        ? { leaseOwner: null, leaseUntil: null }
        : { leaseOwner: opts.lease.owner, leaseUntil: leaseEnd(opts.lease.ms) };
  const where = and(
    eq(interns.id, opts.id),
    opts.leaseOwner === undefined ? undefined : eq(interns.leaseOwner, opts.leaseOwner),
    opts.from ? inArray(interns.status, opts.from) : undefined,
    opts.hostname === undefined ? undefined : eq(interns.hostname, opts.hostname),
    opts.power ? inArray(interns.power, opts.power) : undefined,
    opts.powerAt === undefined
      ? undefined
      : opts.powerAt === null
        ? isNull(interns.powerAt)
        : eq(interns.powerAt, opts.powerAt),
  );
  const [row] = await db
    .update(interns)
    .set({ ...opts.patch, ...lease, updatedAt: new Date() })
    .where(where)
    .returning();
  return row ?? null;
}

export async function deleteInternRow(db: Db, id: string): Promise<void> {
  forget(db, id);
  await db.delete(interns).where(eq(interns.id, id));
}

/** Running interns whose daemon is up (every account): what a hibernation sweep asks. */
export async function awakeInterns(db: Db): Promise<InternRow[]> {
  return db
    .select()
    .from(interns)
    .where(and(eq(interns.status, 'running'), eq(interns.power, 'awake'), isNotNull(interns.hostname)));
}

/** Running interns by power (every account), for the metrics. */
export async function internsByPower(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .select({ power: interns.power, n: count() })
    .from(interns)
    .where(eq(interns.status, 'running'))
    .groupBy(interns.power);
  return Object.fromEntries(rows.map((r) => [r.power, Number(r.n)]));
}

/** Interns whose daemon a starting gateway must check (every account). */
export async function internsWithDaemons(db: Db): Promise<InternRow[]> {
  return db
    .select()
    .from(interns)
    .where(inArray(interns.status, ['running', 'provisioning', 'destroying']));
}

export function openSecrets(sealer: Sealer, row: InternRow): { secret: string; apiKey: string } {
  if (!row.sealedSecret || !row.sealedApiKey) throw new Error('intern has no sealed secrets');
  return {
    secret: sealer.open(row.sealedSecret, secretBinding.daemon(row.id)),
    apiKey: sealer.open(row.sealedApiKey, secretBinding.apiKey(row.id)),
  };
}

/** How many interns have each status, across the store (for the metrics). */
export async function internsByStatus(db: Db): Promise<Record<string, number>> {
  const rows = await db.select({ status: interns.status, n: count() }).from(interns).groupBy(interns.status);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
