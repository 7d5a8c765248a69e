// What a budget scope has spent since a time, from the request log, BYOK apart: the cost charged
// to a key (its own model requests and its interns'), or of the requests that ran under a
// guardrail (docs/guides/keys-and-budgets.md).
import { and, gte, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { inferenceRequests as r } from '../store/schema-inference.ts';
import type { BudgetScope, Spent } from './budgets.ts';

export async function spentSince(db: Db, scope: BudgetScope, from: number): Promise<Spent> {
  const [kind, id] = scope.id.split(':') as [string, string];
  const column = kind === 'key' ? r.chargedKeyId : r.guardrailId;
  const [row] = await db
    .select({
      own: sql<number>`coalesce(sum(${r.cost}) filter (where not ${r.isByok}), 0)`,
      byok: sql<number>`coalesce(sum(${r.cost}) filter (where ${r.isByok}), 0)`,
    })
    .from(r)
    .where(and(sql`${column} = ${id}::uuid`, gte(r.createdAt, new Date(from))));
  return { own: Number(row?.own ?? 0), byok: Number(row?.byok ?? 0) };
}
