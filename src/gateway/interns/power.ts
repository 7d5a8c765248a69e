// Hibernation as data (docs/fleet.md): whether a running intern's daemon is up, what a chat does
// about it, and which moves between the power states are allowed. Pure; hibernation.ts applies
// the moves to the store with compare-and-set updates, so two gateways never both make one.
// May import: store/schema-interns.ts (types only).
import type { InternPower, InternProgress, InternStatus } from '../store/schema-interns.ts';

export type PowerRow = {
  status: InternStatus;
  power: InternPower;
  powerAt: Date | null;
  hostname: string | null;
  /** The lease of the gateway moving it has lapsed (leases.ts): that gateway died. */
  leaseLapsed?: boolean;
};

/**
 * What a chat request does with an intern, by its record:
 * - `relay`: its daemon is up at `hostname`;
 * - `wake`: it sleeps, or a gateway died half-way through putting it to sleep or waking it (its
 *   lease on the move lapsed, or the move is older than `staleMs`): claim the wake and start its daemon;
 * - `wait`: another gateway is putting it to sleep or waking it: read the record again shortly;
 * - `not_ready`: it is not running (the status says why), or running without an address
 *   (restored from a backup, about to be provisioned again).
 */
export type ChatPlan = 'relay' | 'wake' | 'wait' | 'not_ready';

export function chatPlan(row: PowerRow, now: number, staleMs: number): ChatPlan {
  if (row.status !== 'running') return 'not_ready';
  switch (row.power) {
    case 'awake':
      return row.hostname ? 'relay' : 'not_ready';
    case 'asleep':
      return 'wake';
    case 'sleeping':
    case 'waking':
      return row.leaseLapsed || stale(row, now, staleMs) ? 'wake' : 'wait';
  }
}

const stale = (row: PowerRow, now: number, staleMs: number) => !row.powerAt || now - row.powerAt.getTime() > staleMs;

/** Moves between power states, by what happened. A move not in the table is refused (null). */
export type PowerMove =
  /** A sweep found the daemon idle and the daemon agreed to sleep (it refuses new work from then on). */
  | 'sleep'
  /** The daemon of an intern going to sleep was stopped; its address is dropped. */
  | 'stopped'
  /** A chat claims the wake of a sleeping intern (or takes over a stale transition). */
  | 'wake'
  /** The woken daemon answers at its new address. */
  | 'started'
  /** Provision, suspend or a failed start: the intern's status takes over and its power is reset. */
  | 'reset';

const MOVES: Record<PowerMove, { from: readonly InternPower[]; to: InternPower }> = {
  sleep: { from: ['awake'], to: 'sleeping' },
  stopped: { from: ['sleeping'], to: 'asleep' },
  wake: { from: ['asleep', 'sleeping', 'waking'], to: 'waking' },
  started: { from: ['waking'], to: 'awake' },
  reset: { from: ['awake', 'sleeping', 'asleep', 'waking'], to: 'awake' },
};

/** The state after a move, or null when the move does not apply (a `wake` of a transition still
 * under way counts only once it is stale, which chatPlan decides). */
export function move(from: InternPower, m: PowerMove): InternPower | null {
  const rule = MOVES[m];
  return rule.from.includes(from) ? rule.to : null;
}

/** What GET /interns/{id} shows as `progress` of a running intern, so an operator sees it sleep;
 * `status` stays `running`, since a chat wakes it. */
export function powerProgress(power: InternPower): InternProgress | null {
  switch (power) {
    case 'awake':
      return null;
    case 'sleeping':
      return { step_label: 'falling asleep (idle)', step_number: 1, total_steps: 1 };
    case 'asleep':
      return { step_label: 'asleep: the next chat wakes it', step_number: 1, total_steps: 1 };
    case 'waking':
      return { step_label: 'waking up', step_number: 1, total_steps: 1 };
  }
}
