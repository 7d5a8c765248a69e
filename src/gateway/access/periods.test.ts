import { test } from 'node:test';
import assert from 'node:assert/strict';
import { periodEnd, periodStart } from './periods.ts';

const at = (iso: string) => Date.parse(iso);

test('period starts and ends, row by row, at the millisecond around each boundary', () => {
  const rows: [Parameters<typeof periodStart>[0], string, string, string | null][] = [
    [null, '2026-11-27T13:00:00.000Z', '1970-01-01T00:00:00.000Z', null],
    ['daily', '2026-11-27T00:00:00.000Z', '2026-11-27T00:00:00.000Z', '2026-11-28T00:00:00.000Z'],
    ['daily', '2026-11-27T23:59:59.999Z', '2026-11-27T00:00:00.000Z', '2026-11-28T00:00:00.000Z'],
    ['weekly', '2026-11-27T12:00:00.000Z', '2026-11-23T00:00:00.000Z', '2026-11-30T00:00:00.000Z'], // a Friday
    ['weekly', '2026-11-29T23:59:59.999Z', '2026-11-23T00:00:00.000Z', '2026-11-30T00:00:00.000Z'], // Sunday
    ['weekly', '2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z', '2026-12-07T00:00:00.000Z'], // Monday
    ['monthly', '2026-11-30T23:59:59.999Z', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    ['monthly', '2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['monthly', '2028-02-29T10:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
  ];
  for (const [reset, now, start, end] of rows) {
    assert.equal(new Date(periodStart(reset, at(now))).toISOString(), start, `${reset} ${now}`);
    const e = periodEnd(reset, at(now));
    assert.equal(e === null ? null : new Date(e).toISOString(), end, `${reset} ${now}`);
  }
});
