import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { assignAgent, parseAssignment } from './spare.ts';
import type { StartedAgent } from '../acp/spawn.ts';

test('an assignment is the secret and the intern settings, all strings', () => {
  assert.deepEqual(parseAssignment('{"secret":"s3","env":{"COHORT_INTERN_ID":"i1","COHORT_AGENT_UID":"200001"}}'), {
    secret: 's3',
    env: { COHORT_INTERN_ID: 'i1', COHORT_AGENT_UID: '200001' },
  });
});

for (const [line, message] of [
  ['{"env":{}}', 'the spare\'s assignment must be {"secret": …, "env": {…}}'],
  ['{"secret":"","env":{}}', 'the spare\'s assignment must be {"secret": …, "env": {…}}'],
  ['{"secret":"s3"}', 'the spare\'s assignment must be {"secret": …, "env": {…}}'],
  [
    '{"secret":"s3","env":{"COHORT_AGENT_UID":200001}}',
    "the spare's assignment: env.COHORT_AGENT_UID must be a string",
  ],
] as const)
  test(`a malformed assignment is refused, the field named: ${line}`, () => {
    assert.throws(() => parseAssignment(line), { message });
  });

test("the agent's assignment is one line, its uid, working directory and environment, ahead of anything else", async () => {
  const stdin = new PassThrough();
  const spare = { child: { stdin }, exited: new Promise(() => {}) } as unknown as StartedAgent;
  assignAgent(spare, { command: 'node', args: [], cwd: '/intern/work', uid: 200001, env: { HOME: '/intern/home' } });
  stdin.end();
  let written = '';
  for await (const c of stdin) written += String(c);
  assert.equal(written, '{"uid":200001,"cwd":"/intern/work","env":{"HOME":"/intern/home"}}\n');
  assert.throws(() => assignAgent(spare, { command: 'node', args: [], cwd: '/', env: {} }), {
    message: 'a spare agent runs only as an intern uid',
  });
});
