// Budget periods (docs/guides/keys-and-budgets.md): a limit that resets daily, weekly or monthly
// counts spend since the period's start, in UTC: midnight, Monday midnight, the 1st at midnight.
// Pure, so the boundaries are tested at the millisecond with any clock.

export const RESETS = ['daily', 'weekly', 'monthly'] as const;
export type Reset = (typeof RESETS)[number];

const DAY_MS = 86_400_000;

/** The start of the period holding `now` (ms since the epoch); 0 (all time) without a reset. */
export function periodStart(reset: Reset | null, now: number): number {
  if (reset === null) return 0;
  const day = Math.floor(now / DAY_MS) * DAY_MS;
  if (reset === 'daily') return day;
  if (reset === 'weekly') {
    const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
    return day - weekday * DAY_MS;
  }
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The start of the next period (when the limit resets); null without a reset. */
export function periodEnd(reset: Reset | null, now: number): number | null {
  if (reset === null) return null;
  if (reset === 'daily') return periodStart('daily', now) + DAY_MS;
  if (reset === 'weekly') return periodStart('weekly', now) + 7 * DAY_MS;
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
