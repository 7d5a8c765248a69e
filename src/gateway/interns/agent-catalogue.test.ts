import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INSTALL_AGENTS, loadCatalogue } from './agent-catalogue.ts';

test('optional agents not installed are named with the command that installs them', () => {
  const none = loadCatalogue({ installed: () => null });
  assert.deepEqual(none.ids(), ['cohort']);
  assert.deepEqual(none.missing, [
    { id: 'claude-code', name: 'Claude Code', install: INSTALL_AGENTS },
    { id: 'codex', name: 'Codex', install: INSTALL_AGENTS },
  ]);
  const claudeOnly = loadCatalogue({
    installed: (s) => (s.startsWith('@zed-industries/claude-code-acp/') ? '/opt/claude/index.js' : null),
  });
  assert.deepEqual(claudeOnly.ids(), ['cohort', 'claude-code']);
  assert.deepEqual(claudeOnly.get('claude-code')?.command, [process.execPath, '/opt/claude/index.js']);
  assert.deepEqual(
    claudeOnly.missing.map((m) => m.id),
    ['codex'],
  );
});

test("an operator's entry with a built-in's id is not reported missing", () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-catalogue-'));
  const file = join(dir, 'agents.json');
  writeFileSync(
    file,
    JSON.stringify([
      {
        id: 'codex',
        name: 'Our Codex',
        command: ['/usr/local/bin/codex-acp'],
        supports: { sessions: true, questions: false, steering: false },
      },
    ]),
  );
  const c = loadCatalogue({ file, installed: () => null });
  assert.deepEqual(c.ids(), ['cohort', 'codex']);
  assert.deepEqual(
    c.missing.map((m) => m.id),
    ['claude-code'],
  );
});
