// Broadcast destinations of an account's workspaces: create, list, read, delete, and the opened
// form the broadcaster sends to. Headers are sealed (AES-256-GCM under the master key, bound to
// the destination's id) like a BYOK key, opened only in memory for the export, and shown masked.
import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import type { Sealer } from '../crypto/seal.ts';
import { maskSecret } from '../crypto/keys.ts';
import { egressRule, type EgressPolicy } from '../../shared/egress-policy.ts';
import { broadcastDestinations as t, type BroadcastDestinationRow } from '../store/schema-inference.ts';
import { organizations, workspaces } from '../store/schema.ts';
import { defaultWorkspaceDeleted, invalidRequest, resourceNotFound } from '../errors.ts';
import { urlProblem } from './exporter.ts';
import type { Destinations } from './broadcast.ts';
import type { BroadcastDestination, CreateDestination } from './destinations.schemas.ts';

export const MAX_DESTINATIONS_PER_WORKSPACE = 8;

export function toDestination(r: BroadcastDestinationRow): BroadcastDestination {
  return {
    id: r.id,
    name: r.name,
    workspace_id: r.workspaceId,
    kind: r.kind,
    endpoint: r.endpoint,
    protocol: r.protocol,
    headers: r.headerLabels,
    disabled: r.disabled,
    created_at: r.createdAt.toISOString(),
  };
}

/** Whether the operator let collectors on this URL's host be inside the network. */
export function internalAllowed(url: string, egress: EgressPolicy): boolean {
  const u = new URL(url);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return egressRule(egress, u.hostname, port) !== null;
}

async function workspaceOf(db: Db, orgId: string, given: string | undefined): Promise<string> {
  const [ws] = given
    ? await db
        .select({ id: workspaces.id })
        .from(workspaces)
        .where(and(eq(workspaces.id, given.toLowerCase()), eq(workspaces.orgId, orgId)))
        .limit(1)
    : await db
        .select({ id: workspaces.id })
        .from(organizations)
        .innerJoin(workspaces, eq(workspaces.id, organizations.defaultWorkspaceId))
        .where(eq(organizations.id, orgId))
        .limit(1);
  if (!ws) throw given ? invalidRequest('workspace_id: no such workspace in this account') : defaultWorkspaceDeleted();
  return ws.id;
}

export async function createDestination(
  db: Db,
  sealer: Sealer,
  o: { orgId: string; body: CreateDestination; egress: EgressPolicy },
): Promise<BroadcastDestinationRow> {
  const b = o.body;
  if (b.kind === 'webhook')
    throw invalidRequest('kind: webhook destinations are not built yet; use otlp (OpenTelemetry over OTLP/HTTP)');
  const problem = urlProblem(b.endpoint, { internalAllowed: false });
  if (problem && !(urlProblem(b.endpoint, { internalAllowed: true }) === null && internalAllowed(b.endpoint, o.egress)))
    throw invalidRequest(`endpoint: ${problem}`);
  const workspaceId = await workspaceOf(db, o.orgId, b.workspace_id);
  const existing = await db.select({ id: t.id }).from(t).where(eq(t.workspaceId, workspaceId));
  if (existing.length >= MAX_DESTINATIONS_PER_WORKSPACE)
    throw invalidRequest(
      `workspace_id: a workspace has at most ${MAX_DESTINATIONS_PER_WORKSPACE} broadcast destinations`,
    );
  const id = randomUUID();
  const headers = b.headers ?? {};
  const [row] = await db
    .insert(t)
    .values({
      id,
      orgId: o.orgId,
      workspaceId,
      name: b.name ?? null,
      kind: 'otlp',
      endpoint: b.endpoint,
      protocol: b.protocol,
      headersSealed: Object.keys(headers).length ? sealer.seal(JSON.stringify(headers), id) : null,
      headerLabels: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, maskSecret(v)])),
      disabled: b.disabled,
    })
    .returning();
  return row!;
}

export async function listDestinations(db: Db, o: { orgId: string; workspaceId?: string }) {
  return db
    .select()
    .from(t)
    .where(and(eq(t.orgId, o.orgId), o.workspaceId ? eq(t.workspaceId, o.workspaceId) : undefined))
    .orderBy(asc(t.createdAt), asc(t.id));
}

export async function findDestination(db: Db, o: { orgId: string; id: string }) {
  const [row] = await db
    .select()
    .from(t)
    .where(and(eq(t.id, o.id), eq(t.orgId, o.orgId)))
    .limit(1);
  if (!row) throw resourceNotFound();
  return row;
}

export async function deleteDestination(db: Db, o: { orgId: string; id: string }) {
  const [row] = await db
    .delete(t)
    .where(and(eq(t.id, o.id), eq(t.orgId, o.orgId)))
    .returning({ workspaceId: t.workspaceId });
  if (!row) throw resourceNotFound();
  return row;
}

/** Whether a workspace broadcasts, and its enabled destinations, headers opened, for the broadcaster. */
export async function openDestinations(
  db: Db,
  sealer: Sealer,
  o: { workspaceId: string; egress: EgressPolicy },
): Promise<Destinations> {
  const [ws] = await db
    .select({ enabled: workspaces.isObservabilityBroadcastEnabled })
    .from(workspaces)
    .where(eq(workspaces.id, o.workspaceId))
    .limit(1);
  const rows = await db
    .select()
    .from(t)
    .where(and(eq(t.workspaceId, o.workspaceId), eq(t.disabled, false)));
  const list = rows.map((r) => ({
    key: r.id,
    url: r.endpoint,
    protocol: r.protocol,
    headers: r.headersSealed ? (JSON.parse(sealer.open(r.headersSealed, r.id)) as Record<string, string>) : {},
    internalAllowed: internalAllowed(r.endpoint, o.egress),
  }));
  return { enabled: ws?.enabled ?? false, list };
}
