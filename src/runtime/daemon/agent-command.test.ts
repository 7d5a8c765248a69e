import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { getPriority } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCommand } from './agent-command.ts';
import { resolveOptions, type DaemonOptions } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-agent-command-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const base: DaemonOptions = { secret: 's', dir };
const other = { command: '/opt/agent', args: ['--acp'] };

test('no intern priority: the agent runs as configured, and is told none', () => {
  const c = agentCommand(resolveOptions({ ...base, agent: other }));
  assert.deepEqual([c.command, c.args], ['/opt/agent', ['--acp']]);
  assert.equal(agentCommand(resolveOptions(base)).env?.COHORT_AGENT_NICE, undefined);
});

test('the built-in agent lowers its priority itself: it is told the value, not started under nice', () => {
  const c = agentCommand(resolveOptions({ ...base, nice: 10 }));
  assert.equal(c.command, process.execPath);
  assert.equal(c.env?.COHORT_AGENT_NICE, '10');
});

test('another agent starts under nice, by what the daemon still lacks of the intern priority', () => {
  const now = getPriority();
  const c = agentCommand(resolveOptions({ ...base, agent: other, nice: now + 10 }));
  assert.deepEqual([c.command, c.args], ['/usr/bin/nice', ['-n', '10', '--', '/opt/agent', '--acp']]);
  assert.equal(c.env?.COHORT_AGENT_NICE, undefined);
  // A daemon already at the intern priority (after its first turn) adds nothing.
  const at = agentCommand(resolveOptions({ ...base, agent: other, nice: now }));
  assert.deepEqual([at.command, at.args], ['/opt/agent', ['--acp']]);
});

test('under limits, nice comes first and prlimit holds the limits for all the agent starts', () => {
  const now = getPriority();
  const limits = { processes: 64, memoryMb: 512, fileMb: 16, openFiles: 256 };
  const c = agentCommand(resolveOptions({ ...base, agent: other, nice: now + 10, agentLimits: limits }));
  assert.equal(c.command, '/usr/bin/nice');
  assert.deepEqual(c.args.slice(0, 4), ['-n', '10', '--', '/usr/bin/prlimit']);
  assert.deepEqual(c.args.slice(-3), ['--', '/opt/agent', '--acp']);
});
