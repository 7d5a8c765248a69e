// The power table row by row: what a chat does with an intern, and which moves apply from where.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatPlan, move, powerProgress, type ChatPlan, type PowerMove, type PowerRow } from './power.ts';
import { INTERN_POWER, INTERN_STATUSES, type InternPower } from '../store/schema-interns.ts';

const NOW = 1_000_000;
const STALE = 30_000;
const row = (o: Partial<PowerRow>): PowerRow => ({
  status: 'running',
  power: 'awake',
  powerAt: null,
  hostname: 'unix:/run/d.sock',
  ...o,
});
const fresh = new Date(NOW - 1_000);
const old = new Date(NOW - STALE - 1);

const plans: [string, Partial<PowerRow>, ChatPlan][] = [
  ['awake with an address: relayed', {}, 'relay'],
  ['awake without an address (restored from a backup): not ready', { hostname: null }, 'not_ready'],
  ['asleep: woken', { power: 'asleep', hostname: null, powerAt: fresh }, 'wake'],
  ['falling asleep, recently: wait', { power: 'sleeping', powerAt: fresh }, 'wait'],
  ['falling asleep, stale (its gateway died): woken', { power: 'sleeping', powerAt: old }, 'wake'],
  ['waking, recently: wait', { power: 'waking', hostname: null, powerAt: fresh }, 'wait'],
  ['waking, stale: woken (taken over)', { power: 'waking', hostname: null, powerAt: old }, 'wake'],
  ['a transition without a date counts as stale', { power: 'waking', hostname: null, powerAt: null }, 'wake'],
  [
    'waking, recently, but its gateway’s lease lapsed (it died): woken at once',
    { power: 'waking', hostname: null, powerAt: fresh, leaseLapsed: true },
    'wake',
  ],
  [
    'falling asleep, recently, its gateway’s lease lapsed: woken at once',
    { power: 'sleeping', powerAt: fresh, leaseLapsed: true },
    'wake',
  ],
  ['waking, its lease held: wait', { power: 'waking', hostname: null, powerAt: fresh, leaseLapsed: false }, 'wait'],
  [
    'asleep, whatever its lease: woken',
    { power: 'asleep', hostname: null, powerAt: fresh, leaseLapsed: false },
    'wake',
  ],
  ['awake, a lapsed lease changes nothing', { leaseLapsed: true }, 'relay'],
];
for (const [name, r, want] of plans) test(`chat plan: ${name}`, () => assert.equal(chatPlan(row(r), NOW, STALE), want));

test('chat plan: every status but running is not ready, whatever the power', () => {
  for (const status of INTERN_STATUSES.filter((s) => s !== 'running'))
    for (const power of INTERN_POWER)
      assert.equal(chatPlan(row({ status, power, powerAt: old }), NOW, STALE), 'not_ready', `${status}/${power}`);
});

const moves: [InternPower, PowerMove, InternPower | null][] = [
  ['awake', 'sleep', 'sleeping'],
  ['sleeping', 'sleep', null],
  ['asleep', 'sleep', null],
  ['waking', 'sleep', null],
  ['sleeping', 'stopped', 'asleep'],
  ['awake', 'stopped', null],
  ['asleep', 'stopped', null],
  ['waking', 'stopped', null],
  ['asleep', 'wake', 'waking'],
  ['sleeping', 'wake', 'waking'],
  ['waking', 'wake', 'waking'],
  ['awake', 'wake', null],
  ['waking', 'started', 'awake'],
  ['asleep', 'started', null],
  ['sleeping', 'started', null],
  ['awake', 'started', null],
  ['awake', 'reset', 'awake'],
  ['sleeping', 'reset', 'awake'],
  ['asleep', 'reset', 'awake'],
  ['waking', 'reset', 'awake'],
];
for (const [from, m, to] of moves)
  test(`move: ${from} + ${m} → ${to ?? 'refused'}`, () => assert.equal(move(from, m), to));

test('progress shows the power of a running intern, and nothing while awake', () => {
  assert.equal(powerProgress('awake'), null);
  assert.deepEqual(powerProgress('asleep'), {
    step_label: 'asleep: the next chat wakes it',
    step_number: 1,
    total_steps: 1,
  });
  assert.deepEqual(powerProgress('sleeping'), { step_label: 'falling asleep (idle)', step_number: 1, total_steps: 1 });
  assert.deepEqual(powerProgress('waking'), { step_label: 'waking up', step_number: 1, total_steps: 1 });
});
