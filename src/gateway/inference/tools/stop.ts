// The server-tool loop's state machine (docs/guides/server-tools.md), pure: after each model turn,
// whether the loop answers as it is, or runs the turn's server-tool calls and then either asks the
// model again or makes one final turn with tool calls disabled. Stop conditions (any one ends the
// loop) override `max_tool_calls`; MAX_TOOL_CALLS bounds every request whatever it sets.
// May import: ../../http/common.schemas.ts (types), ../types.ts (types).
import { MAX_TOOL_CALLS, type StopCondition } from '../../http/common.schemas.ts';
import type { FinishReason } from '../types.ts';

/** What the loop has spent so far, this turn and the tools' own model calls included. */
export type Totals = { steps: number; toolCalls: number; cost: number; tokens: number };

/** One model turn as the loop sees it. */
export type Turn = {
  finish: FinishReason | null;
  /** The server tools it called, by type (`service:datetime`), in order. */
  serverCalls: string[];
  /** Calls of the client's own function tools (the client runs them). */
  clientCalls: number;
  /** This was the final turn, made with tool calls disabled. */
  final: boolean;
};

export type Limits = { stopWhen: StopCondition[] | null; maxToolCalls: number };

export type Decision =
  /** The turn is the answer. */
  | { kind: 'answer' }
  /** Run the first `run` server calls (the rest are answered "not run"); then another turn, `final` or not. */
  | { kind: 'run'; run: number; final: boolean; why: string | null };

/** A tool named in has_tool_call matches its type (`service:web_search`) or the function name models see (`web_search`). */
const named = (want: string, type: string) => want === type || `service:${want}` === type;

/** The first condition that holds after `turn`, or null. */
export function firedCondition(conditions: StopCondition[], totals: Totals, turn: Turn): StopCondition | null {
  for (const c of conditions) {
    switch (c.type) {
      case 'step_count_is':
        if (totals.steps >= c.step_count) return c;
        break;
      case 'max_cost':
        if (totals.cost >= c.max_cost_in_dollars) return c;
        break;
      case 'max_tokens_used':
        if (totals.tokens >= c.max_tokens) return c;
        break;
      case 'has_tool_call':
        if (turn.serverCalls.some((t) => named(c.tool_name, t))) return c;
        break;
      case 'finish_reason_is':
        if (turn.finish === c.reason) return c;
        break;
    }
  }
  return null;
}

/** The server-tool calls this request may run in all. */
export const budgetOf = (limits: Limits): number =>
  limits.stopWhen ? MAX_TOOL_CALLS : Math.min(limits.maxToolCalls, MAX_TOOL_CALLS);

/** What follows a turn. `totals` includes the turn; `expired`: the loop's deadline has passed. */
export function decide(o: { limits: Limits; totals: Totals; turn: Turn; expired: boolean }): Decision {
  const { turn, totals } = o;
  // A final turn, a turn that calls the client's tools (the client runs them; the loop stops there)
  // and a turn without server calls are answers.
  if (turn.final || turn.clientCalls > 0 || turn.serverCalls.length === 0) return { kind: 'answer' };
  const budget = budgetOf(o.limits);
  const run = Math.max(0, Math.min(turn.serverCalls.length, budget - totals.toolCalls));
  const fired = o.limits.stopWhen ? firedCondition(o.limits.stopWhen, totals, turn) : null;
  const why = fired
    ? `stop condition ${fired.type}`
    : totals.toolCalls + run >= budget
      ? `${o.limits.stopWhen ? 'the limit of' : 'max_tool_calls'} ${budget} tool calls`
      : o.expired
        ? 'the loop deadline'
        : null;
  return { kind: 'run', run, final: why !== null, why };
}
