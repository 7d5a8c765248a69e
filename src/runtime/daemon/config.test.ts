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
  assert.deepEqual(
    [r.host, r.interactionDeadlineMs, r.replayBufferEvents, r.maxPausedRuns, r.keepaliveMs],
    ['127.0.0.1', 1000, 10_000, 32, 15_000],
  );
  assert.deepEqual(
    optionsFromEnv({ COHORT_DAEMON_SECRET: 's', COHORT_INTERN_DIR: '/d', COHORT_AGENT_COMMAND: 'other-agent --stdio' })
      .agent,
    { command: 'other-agent', args: ['--stdio'] },
  );
  assert.equal(
    resolveOptions({ secret: 's', dir: '/d' }).agent.args.at(-1)?.endsWith('src/runtime/agent/main.ts'),
    true,
  );
});

test('inside an isolated runtime: a socket, the gateway sockets, the agent uid and limits; the secret given, not from the environment', () => {
  const limits = { processes: 64, memoryMb: 512, fileMb: 100, openFiles: 256 };
  const o = optionsFromEnv(
    {
      COHORT_INTERN_DIR: '/intern',
      COHORT_DAEMON_SOCKET: '/run/cohort/d.sock',
      COHORT_GATEWAY_SOCKETS: '/run/cohort/gw',
      COHORT_AGENT_UID: '200001',
      COHORT_AGENT_LIMITS: JSON.stringify(limits),
      COHORT_AGENT_MODEL: 'local/scripted',
      COHORT_ALLOW_ESCALATION: '1',
    },
    [],
    { secret: 'from-stdin' },
  );
  assert.deepEqual(
    [o.secret, o.socket, o.gatewaySockets, o.agentUid, o.allowEscalation],
    ['from-stdin', '/run/cohort/d.sock', '/run/cohort/gw', 200001, true],
  );
  assert.deepEqual(o.agentLimits, limits);
  // The base URL is the daemon's own forwarder, filled in once it listens.
  assert.deepEqual(o.model, { baseUrl: '', apiKey: '', model: 'local/scripted' });
  assert.equal(resolveOptions({ secret: 's', dir: '/d' }).allowEscalation, false);
});

test('the secret and the intern directory are required', () => {
  assert.throws(
    () => optionsFromEnv({ COHORT_INTERN_DIR: '/d' }),
    /COHORT_DAEMON_SECRET \(or the secret on stdin, with COHORT_DAEMON_SECRET_STDIN=1\) is required/,
  );
  assert.throws(() => optionsFromEnv({ COHORT_DAEMON_SECRET: 's' }), /COHORT_INTERN_DIR/);
});

test("a catalogue agent's command and settings get the intern's model endpoint filled in", async () => {
  const { fill } = await import('./agent-command.ts');
  const model = { baseUrl: 'http://127.0.0.1:40123/api/v1', apiKey: 'sk-intern', model: '@preset/coder' };
  assert.equal(fill('{{origin}}/api', model), 'http://127.0.0.1:40123/api');
  assert.equal(
    fill('model_providers.cohort.base_url="{{base_url}}"', model),
    'model_providers.cohort.base_url="http://127.0.0.1:40123/api/v1"',
  );
  assert.equal(fill('{{api_key}}:{{model}}:{{model}}', model), 'sk-intern:@preset/coder:@preset/coder');
  assert.equal(fill('{{origin}}', undefined), '{{origin}}');
});
