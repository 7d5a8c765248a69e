import { test } from 'node:test';
import assert from 'node:assert/strict';
import { whatWillRun } from './chat-prompts.ts';

const base = { kind: 'permission' as const, operation: 'shell', options: ['allow_once' as const] };
for (const [name, it, shown] of [
  [
    'a sandboxed command',
    { ...base, title: 'Run in the sandbox: ls', input: { command: 'ls', escalate: false }, sandbox: 'inner' as const },
    "  command: ls\n  runs inside the intern's sandbox (no network, writes only in its work directory)\n",
  ],
  [
    'an escalation',
    {
      ...base,
      title: 'Run outside the sandbox: rm x',
      input: { command: 'rm x', escalate: true },
      sandbox: 'escalated' as const,
    },
    "  command: rm x\n  runs OUTSIDE the sandbox, with everything the intern's machine may do\n",
  ],
  [
    "another agent's tool: its title and input",
    { ...base, operation: 'Edit', title: 'Edit notes.md', input: { path: 'notes.md' }, sandbox: null },
    '  Edit notes.md\n  input: {"path":"notes.md"}\n',
  ],
  ['an older daemon without the extension', base, ''],
] as const) {
  test(`what will run: ${name}`, () => {
    assert.equal(whatWillRun(it), shown);
  });
}
