// The loop's state machine, table by table: what follows a turn for each stop condition, the
// budget of max_tool_calls, and the answers that end the loop whatever the limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { budgetOf, decide, firedCondition, type Limits, type Totals, type Turn } from './stop.ts';

const totals = (t: Partial<Totals> = {}): Totals => ({ steps: 1, toolCalls: 0, cost: 0, tokens: 0, ...t });
const turn = (t: Partial<Turn> = {}): Turn => ({
  finish: 'tool_calls',
  serverCalls: ['service:datetime'],
  clientCalls: 0,
  final: false,
  ...t,
});
const plain: Limits = { stopWhen: null, maxToolCalls: 30 };

test('answers: a final turn, a turn calling a client tool, a turn without server calls', () => {
  assert.deepEqual(decide({ limits: plain, totals: totals(), turn: turn({ final: true }), expired: false }), {
    kind: 'answer',
  });
  assert.deepEqual(decide({ limits: plain, totals: totals(), turn: turn({ clientCalls: 1 }), expired: false }), {
    kind: 'answer',
  });
  assert.deepEqual(
    decide({ limits: plain, totals: totals(), turn: turn({ serverCalls: [], finish: 'stop' }), expired: false }),
    {
      kind: 'answer',
    },
  );
});

test('each stop condition, holding and not', () => {
  const rows: [Limits['stopWhen'], Partial<Totals>, Partial<Turn>, string | null][] = [
    [[{ type: 'step_count_is', step_count: 2 }], { steps: 1 }, {}, null],
    [[{ type: 'step_count_is', step_count: 2 }], { steps: 2 }, {}, 'step_count_is'],
    [[{ type: 'max_cost', max_cost_in_dollars: 0.001 }], { cost: 0.0009 }, {}, null],
    [[{ type: 'max_cost', max_cost_in_dollars: 0.001 }], { cost: 0.001 }, {}, 'max_cost'],
    [[{ type: 'max_tokens_used', max_tokens: 100 }], { tokens: 99 }, {}, null],
    [[{ type: 'max_tokens_used', max_tokens: 100 }], { tokens: 100 }, {}, 'max_tokens_used'],
    [[{ type: 'has_tool_call', tool_name: 'web_search' }], {}, {}, null],
    [[{ type: 'has_tool_call', tool_name: 'datetime' }], {}, {}, 'has_tool_call'],
    [[{ type: 'has_tool_call', tool_name: 'service:datetime' }], {}, {}, 'has_tool_call'],
    [[{ type: 'finish_reason_is', reason: 'length' }], {}, {}, null],
    [[{ type: 'finish_reason_is', reason: 'tool_calls' }], {}, {}, 'finish_reason_is'],
    // Any one ends the loop.
    [
      [
        { type: 'max_cost', max_cost_in_dollars: 5 },
        { type: 'step_count_is', step_count: 1 },
      ],
      {},
      {},
      'step_count_is',
    ],
  ];
  for (const [stopWhen, t, u, fired] of rows) {
    const got = firedCondition(stopWhen!, totals(t), turn(u));
    assert.equal(got?.type ?? null, fired, JSON.stringify(stopWhen));
    const d = decide({ limits: { stopWhen, maxToolCalls: 30 }, totals: totals(t), turn: turn(u), expired: false });
    // The pending calls run either way; a fired condition makes the next turn the final one.
    assert.deepEqual(d, { kind: 'run', run: 1, final: fired !== null, why: fired ? `stop condition ${fired}` : null });
  }
});

test('max_tool_calls: calls over the budget are not run, and the next turn is final; stop conditions override it', () => {
  const limits: Limits = { stopWhen: null, maxToolCalls: 2 };
  assert.deepEqual(decide({ limits, totals: totals({ toolCalls: 0 }), turn: turn(), expired: false }), {
    kind: 'run',
    run: 1,
    final: false,
    why: null,
  });
  assert.deepEqual(
    decide({ limits, totals: totals({ toolCalls: 1 }), turn: turn({ serverCalls: ['a', 'b', 'c'] }), expired: false }),
    {
      kind: 'run',
      run: 1,
      final: true,
      why: 'max_tool_calls 2 tool calls',
    },
  );
  const overridden: Limits = { stopWhen: [{ type: 'step_count_is', step_count: 99 }], maxToolCalls: 2 };
  assert.equal(budgetOf(overridden), 30);
  assert.deepEqual(decide({ limits: overridden, totals: totals({ toolCalls: 5 }), turn: turn(), expired: false }), {
    kind: 'run',
    run: 1,
    final: false,
    why: null,
  });
  // The maximum holds whatever the conditions.
  assert.deepEqual(
    decide({
      limits: overridden,
      totals: totals({ toolCalls: 29 }),
      turn: turn({ serverCalls: ['a', 'b'] }),
      expired: false,
    }),
    {
      kind: 'run',
      run: 1,
      final: true,
      why: 'the limit of 30 tool calls',
    },
  );
  assert.equal(budgetOf({ stopWhen: null, maxToolCalls: 500 }), 30);
});

test('the deadline makes the next turn final', () => {
  assert.deepEqual(decide({ limits: plain, totals: totals(), turn: turn(), expired: true }), {
    kind: 'run',
    run: 1,
    final: true,
    why: 'the loop deadline',
  });
});
