import { test } from 'node:test';
import assert from 'node:assert/strict';
import { optionsFromEnv, resolveOptions } from './config.ts';

test('options from the environment and flags; flags win; defaults fill the rest', () => {
  const o = optionsFromEnv(
    {
      COHORT_DAEMON_SECRET: 's',
      COHORT_INTERN_DIR: '/env/dir',
      COHORT_DAEMON_PORT: '7001',
      COHORT_AGENT_COMMAND: '["my-agent", "--acp", "a b"]',
      COHORT_AGENT_BASE_URL: 'http://gw/api/v1',
      COHORT_AGENT_API_KEY: 'k',
      COHORT_INTERACTION_DEADLINE_MS: '1000',
    },
    ['--dir', '/flag/dir'],
  );
  assert.equal(o.dir, '/flag/dir');
  assert.equal(o.port, 7001);
  assert.deepEqual(o.agent, { command: 'my-agent', args: ['--acp', 'a b'] });
  assert.deepEqual(o.model, { baseUrl: 'http://gw/api/v1', apiKey: 'k', model: 'local/scripted' });
  const r = resolveOptions(o);
  assert.deepEqual([r.host, r.interactionDeadlineMs, r.replayBufferEvents, r.maxPausedRuns, r.keepaliveMs], ['127.0.0.1', 1000, 10_000, 32, 15_000]);
  assert.deepEqual(optionsFromEnv({ COHORT_DAEMON_SECRET: 's', COHORT_INTERN_DIR: '/d', COHORT_AGENT_COMMAND: 'other-agent --stdio' }).agent, { command: 'other-agent', args: ['--stdio'] });
  assert.equal(resolveOptions({ secret: 's', dir: '/d' }).agent.args.at(-1)?.endsWith('src/agent/main.ts'), true);
});

test('the secret and the intern directory are required', () => {
  assert.throws(() => optionsFromEnv({ COHORT_INTERN_DIR: '/d' }), /COHORT_DAEMON_SECRET is required/);
  assert.throws(() => optionsFromEnv({ COHORT_DAEMON_SECRET: 's' }), /COHORT_INTERN_DIR/);
});
