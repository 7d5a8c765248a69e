// The request log summed per UTC day and model, in the shape of OpenRouter's activity endpoint
// (the official SDK's ActivityItem): what the web console's usage chart and an operator's scripts
// read. Only requests a provider served count (a request refused before routing names no model).
// Unlike OpenRouter's, today (still running) is included: a team's first hour should show up.
import { and, eq, gte, isNotNull, lt, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { inferenceRequests as t } from '../store/schema-inference.ts';

export type ActivityQuery = { orgId: string; date?: string; workspaceId?: string; byWorkspace: boolean; now?: Date };

export type ActivityItem = {
  date: string;
  model: string;
  model_permaslug: string;
  endpoint_id: string;
  provider_name: string;
  usage: number;
  byok_usage_inference: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  workspace_id?: string;
};

const DAY_MS = 86_400_000;
/** How far back the summary reaches: today and the 30 days before it. */
const DAYS = 30;

export async function activity(db: Db, q: ActivityQuery): Promise<ActivityItem[]> {
  const today = Date.parse((q.now ?? new Date()).toISOString().slice(0, 10));
  const from = q.date ? Date.parse(q.date) : today - DAYS * DAY_MS;
  const to = q.date ? from + DAY_MS : today + DAY_MS;
  const day = sql<string>`to_char(${t.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .select({
      date: day,
      model: t.model,
      provider: t.provider,
      workspaceId: q.byWorkspace ? t.workspaceId : sql<null>`null`,
      requests: sql<number>`count(*)::int`,
      promptTokens: sql<number>`coalesce(sum(${t.promptTokens}), 0)::int`,
      completionTokens: sql<number>`coalesce(sum(${t.completionTokens}), 0)::int`,
      usage: sql<number>`coalesce(sum(case when ${t.isByok} then 0 else ${t.cost} end), 0)::float8`,
      byokUsage: sql<number>`coalesce(sum(case when ${t.isByok} then ${t.cost} else 0 end), 0)::float8`,
    })
    .from(t)
    .where(
      and(
        eq(t.orgId, q.orgId),
        isNotNull(t.model),
        gte(t.createdAt, new Date(Math.max(from, today - DAYS * DAY_MS))),
        lt(t.createdAt, new Date(to)),
        q.workspaceId ? eq(t.workspaceId, q.workspaceId) : undefined,
      ),
    )
    .groupBy(day, t.model, t.provider, ...(q.byWorkspace ? [t.workspaceId] : []))
    .orderBy(day, t.model);
  return rows.map((r) => ({
    date: r.date,
    model: r.model!,
    model_permaslug: r.model!,
    endpoint_id: `${r.provider ?? 'unknown'}:${r.model}`,
    provider_name: r.provider ?? 'unknown',
    usage: r.usage,
    byok_usage_inference: r.byokUsage,
    requests: r.requests,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    reasoning_tokens: 0,
    ...(q.byWorkspace && r.workspaceId ? { workspace_id: r.workspaceId } : {}),
  }));
}
