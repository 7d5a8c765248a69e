import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AUTO_MODEL, chooseModel, matches, type ModelCandidate, type RouterSettings } from './router.ts';

// Five priced models from cheapest to dearest, one unpriced.
const models: ModelCandidate[] = [
  { id: 'openai/gpt-4o', price: 12.5, healthy: true },
  { id: 'local/scripted', price: 3, healthy: true },
  { id: 'anthropic/claude-opus-4', price: 90, healthy: true },
  { id: 'openai/gpt-4o-mini', price: 0.75, healthy: true },
  { id: 'anthropic/claude-sonnet-4', price: 18, healthy: true },
  { id: 'ollama/llama3', price: null, healthy: true },
  { id: AUTO_MODEL, price: 0, healthy: true },
];
const base: RouterSettings = { allowed: null, excluded: [], tier: 'medium', pinned: null };
const pick = (s: Partial<RouterSettings>, cands = models) => chooseModel(cands, { ...base, ...s });

test('the choice for a table of settings', () => {
  const rows: [Partial<RouterSettings>, string | null, string[]][] = [
    [{}, 'openai/gpt-4o', ['anthropic/claude-sonnet-4', 'local/scripted', 'anthropic/claude-opus-4']],
    [{ tier: 'low' }, 'openai/gpt-4o-mini', ['local/scripted', 'openai/gpt-4o', 'anthropic/claude-sonnet-4']],
    [{ tier: 'high' }, 'anthropic/claude-sonnet-4', ['anthropic/claude-opus-4', 'openai/gpt-4o', 'local/scripted']],
    [{ tier: 'xhigh' }, 'anthropic/claude-opus-4', ['anthropic/claude-sonnet-4', 'openai/gpt-4o', 'local/scripted']],
    [{ tier: 'max' }, 'anthropic/claude-opus-4', ['anthropic/claude-sonnet-4', 'openai/gpt-4o', 'local/scripted']],
    [{ allowed: ['anthropic/*'] }, 'anthropic/claude-opus-4', ['anthropic/claude-sonnet-4']],
    [{ allowed: ['anthropic/*'], tier: 'low' }, 'anthropic/claude-sonnet-4', ['anthropic/claude-opus-4']],
    [{ excluded: ['openai/*', 'local/*'] }, 'anthropic/claude-opus-4', ['anthropic/claude-sonnet-4']],
    [{ allowed: ['ollama/*'] }, 'ollama/llama3', []],
    [{ allowed: ['openai/gpt-4o'] }, 'openai/gpt-4o', []],
    [{ allowed: ['nobody/*'] }, null, []],
    [{ allowed: [AUTO_MODEL] }, null, []],
    [
      { pinned: 'local/scripted' },
      'local/scripted',
      ['openai/gpt-4o', 'openai/gpt-4o-mini', 'anthropic/claude-sonnet-4'],
    ],
    [
      { pinned: 'gone/model' },
      'openai/gpt-4o',
      ['anthropic/claude-sonnet-4', 'local/scripted', 'anthropic/claude-opus-4'],
    ],
  ];
  for (const [s, model, fallbacks] of rows) {
    const got = pick(s);
    assert.deepEqual(got && [got.model, got.fallbacks], model && [model, fallbacks], JSON.stringify(s));
  }
  // deterministic: the same inputs in another order give the same choice
  assert.deepEqual(pick({}, [...models].reverse()), pick({}));
});

test('health: a model with no healthy endpoint is passed over, and the pin lets go of it', () => {
  const sick = models.map((m) => (m.id === 'openai/gpt-4o' ? { ...m, healthy: false } : m));
  // four healthy left: the median is now the third cheapest
  assert.equal(pick({}, sick)?.model, 'anthropic/claude-sonnet-4');
  assert.equal(pick({ pinned: 'openai/gpt-4o' }, sick)?.pinned, false);
  const allSick = models.map((m) => ({ ...m, healthy: false }));
  assert.equal(pick({}, allSick)?.model, 'openai/gpt-4o');
});

test('patterns: * matches any run of characters, other characters literally', () => {
  assert.ok(matches('anthropic/*', 'anthropic/claude-sonnet-4'));
  assert.ok(matches('*-mini', 'openai/gpt-4o-mini'));
  assert.ok(!matches('openai/gpt-4o', 'openai/gpt-4o-mini'));
  assert.ok(!matches('openai/gpt.4o', 'openai/gpt-4o'));
});
