// What a budget scope has spent since a time, from the request log: the cost charged to a key
// (its own model requests and its interns'), BYOK apart (docs/guides/keys-and-budgets.md).
import { and, gte, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { inferenceRequests as r } from '../store/schema-inference.ts';
import type { BudgetScope, Spent } from './budgets.ts';

export async function spentSince(db: Db, scope: BudgetScope, from: number): Promise<Spent> {
  const [kind, id] = scope.id.split(':') as [string, string];
  if (kind !== 'key') throw new Error(`unknown budget scope ${scope.id}`);
  const [row] = await db
    .select({
      own: sql<number>`coalesce(sum(${r.cost}) filter (where not ${r.isByok}), 0)`,
      byok: sql<number>`coalesce(sum(${r.cost}) filter (where ${r.isByok}), 0)`,
    })
    .from(r)
    .where(and(sql`${r.chargedKeyId} = ${id}::uuid`, gte(r.createdAt, new Date(from))));
  return { own: Number(row?.own ?? 0), byok: Number(row?.byok ?? 0) };
}
