// Workspaces of an account: create, read, update, delete, and the mapping to the API shape.
import { randomUUID } from 'node:crypto';
import { and, asc, count, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { apiKeys, organizations, workspaces } from '../store/schema.ts';
import { interns } from '../store/schema-interns.ts';
import { isUniqueViolation } from '../store/errors.ts';
import { invalidRequest, resourceNotFound, workspaceHoldsInterns } from '../errors.ts';
import type { CreateWorkspace, UpdateWorkspace, Workspace } from './workspaces.schemas.ts';
import { deriveUuid } from '../access/derive.ts';
import { isUuid } from '../http/common.schemas.ts';
import { checkDefaultGuardrail } from './guardrails.ts';

type Row = typeof workspaces.$inferSelect;

export function toWorkspace(r: Row): Workspace {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt?.toISOString() ?? null,
    created_by: r.createdBy,
    // Without a default of its own, the id of an empty guardrail that imposes nothing (a string, as the SDK's shape has it).
    default_guardrail_id: r.defaultGuardrailId ?? deriveUuid('guardrail', r.id),
    default_image_model: r.defaultImageModel,
    default_text_model: r.defaultTextModel,
    default_provider_sort: r.defaultProviderSort as Workspace['default_provider_sort'],
    disabled_server_tools: (r.disabledServerTools as Workspace['disabled_server_tools']) ?? null,
    include_byok_in_budgets: r.includeByokInBudgets,
    io_logging_api_key_ids: r.ioLoggingApiKeyIds ?? null,
    io_logging_sampling_rate: r.ioLoggingSamplingRate,
    is_data_discount_logging_enabled: r.isDataDiscountLoggingEnabled,
    is_observability_broadcast_enabled: r.isObservabilityBroadcastEnabled,
    is_observability_io_logging_enabled: r.isObservabilityIoLoggingEnabled,
  };
}

/** API fields to columns; an empty disabled-tools list is stored as null ("clears the list"). */
function columns(body: UpdateWorkspace): Partial<typeof workspaces.$inferInsert> {
  const tools = body.disabled_server_tools;
  return {
    name: body.name,
    slug: body.slug,
    description: body.description,
    defaultImageModel: body.default_image_model,
    defaultTextModel: body.default_text_model,
    defaultProviderSort: body.default_provider_sort,
    disabledServerTools: tools === undefined ? undefined : tools?.length ? [...new Set(tools)] : null,
    includeByokInBudgets: body.include_byok_in_budgets,
    defaultGuardrailId: body.default_guardrail_id,
    ioLoggingApiKeyIds: body.io_logging_api_key_ids,
    ioLoggingSamplingRate: body.io_logging_sampling_rate,
    isDataDiscountLoggingEnabled: body.is_data_discount_logging_enabled,
    isObservabilityBroadcastEnabled: body.is_observability_broadcast_enabled,
    isObservabilityIoLoggingEnabled: body.is_observability_io_logging_enabled,
  };
}

const slugTaken = () => invalidRequest('slug: a workspace with this slug already exists in the account');

export async function createWorkspace(
  db: Db,
  opts: { orgId: string; userId: string; body: CreateWorkspace },
): Promise<Row> {
  if (opts.body.default_guardrail_id)
    await checkDefaultGuardrail(db, { orgId: opts.orgId, workspaceId: null, id: opts.body.default_guardrail_id });
  try {
    const [row] = await db
      .insert(workspaces)
      .values({
        ...columns(opts.body),
        id: randomUUID(),
        orgId: opts.orgId,
        createdBy: opts.userId,
        name: opts.body.name,
        slug: opts.body.slug,
      })
      .returning();
    return row!;
  } catch (err) {
    if (isUniqueViolation(err)) throw slugTaken();
    throw err;
  }
}

// The read every workspace route starts with, as named prepared statements (built once per
// database handle, parsed and planned once per connection): the hot path of GET /workspaces/{id}.
function prepareFind(db: Db) {
  const where = (match: ReturnType<typeof eq>) =>
    db
      .select()
      .from(workspaces)
      .where(and(eq(workspaces.orgId, sql.placeholder('orgId')), match))
      .limit(1);
  return {
    id: where(eq(workspaces.id, sql.placeholder('key'))).prepare('cohort_workspace_by_id'),
    slug: where(eq(workspaces.slug, sql.placeholder('key'))).prepare('cohort_workspace_by_slug'),
  };
}
const prepared = new WeakMap<Db, ReturnType<typeof prepareFind>>();

/** A workspace of the account by UUID or slug; another account's is indistinguishable from none. */
export async function findWorkspace(db: Db, opts: { orgId: string; idOrSlug: string }): Promise<Row> {
  let find = prepared.get(db);
  if (!find) prepared.set(db, (find = prepareFind(db)));
  const byId = isUuid(opts.idOrSlug);
  const [row] = await (byId ? find.id : find.slug).execute({
    orgId: opts.orgId,
    key: byId ? opts.idOrSlug.toLowerCase() : opts.idOrSlug,
  });
  if (!row) throw resourceNotFound('workspace');
  return row;
}

export async function updateWorkspace(
  db: Db,
  opts: { orgId: string; idOrSlug: string; body: UpdateWorkspace },
): Promise<Row> {
  const current = await findWorkspace(db, opts);
  const guardrail = opts.body.default_guardrail_id;
  // The id shown for a workspace without a default of its own names that absence.
  const body =
    guardrail && guardrail === deriveUuid('guardrail', current.id)
      ? { ...opts.body, default_guardrail_id: null }
      : opts.body;
  if (body.default_guardrail_id)
    await checkDefaultGuardrail(db, { orgId: opts.orgId, workspaceId: current.id, id: body.default_guardrail_id });
  try {
    const [row] = await db
      .update(workspaces)
      .set({ ...columns(body), updatedAt: new Date() })
      .where(eq(workspaces.id, current.id))
      .returning();
    if (!row) throw resourceNotFound('workspace');
    return row;
  } catch (err) {
    if (isUniqueViolation(err)) throw slugTaken();
    throw err;
  }
}

export async function listWorkspaces(db: Db, opts: { orgId: string; offset: number; limit: number }) {
  const where = eq(workspaces.orgId, opts.orgId);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(workspaces)
      .where(where)
      .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
      .offset(opts.offset)
      .limit(opts.limit),
    db.select({ n: count() }).from(workspaces).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

const holdsInterns = (n: number) => workspaceHoldsInterns(n);

/** Deletes the workspace with its presets and credentials, and revokes the keys created for it;
 * deleting the default leaves the account without one. Refused while interns live in it: their
 * daemons would run on with no record to stop them by. Returns its id: cached key resolutions
 * acting in it must be dropped. */
export async function deleteWorkspace(db: Db, opts: { orgId: string; idOrSlug: string }): Promise<string> {
  const row = await findWorkspace(db, opts);
  await db.transaction(async (tx) => {
    // The row lock holds off an intern being created meanwhile: its foreign-key check waits, then fails.
    await tx.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.id, row.id)).for('update');
    const [held] = await tx.select({ n: count() }).from(interns).where(eq(interns.workspaceId, row.id));
    if (held!.n) throw holdsInterns(held!.n);
    // A key bound to this workspace ends with it, rather than falling back to the account's default.
    await tx
      .update(apiKeys)
      .set({ revokedAt: new Date() })
      .where(and(eq(apiKeys.workspaceId, row.id), isNull(apiKeys.revokedAt)));
    await tx.delete(workspaces).where(eq(workspaces.id, row.id));
    await tx
      .update(organizations)
      .set({ defaultWorkspaceId: null })
      .where(and(eq(organizations.id, opts.orgId), eq(organizations.defaultWorkspaceId, row.id)));
  });
  return row.id;
}
