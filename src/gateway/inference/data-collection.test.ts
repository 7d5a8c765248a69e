// is_data_discount_logging_enabled (docs/guides/observability.md): a shared endpoint the operator
// marked as logging or training on prompts (COHORT_PROVIDER_<SLUG>_DATA_COLLECTION=allow) serves
// only workspaces that turned the setting on; a workspace's own BYOK key is its own contract.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { upstreamEnv } from '../../../test/helpers/inference-fixtures.ts';

describe('data-discount logging: endpoints marked as collecting data', () => {
  let gw: TestGateway;
  let up: FakeUpstream;
  const ask = (model: string) =>
    gw.call('POST', '/chat/completions', {
      key: gw.keys.api_key,
      body: { model, messages: [{ role: 'user', content: 'hi' }] },
    });
  const setting = (on: boolean) =>
    gw.call('PATCH', `/workspaces/${gw.keys.workspace_id}`, { body: { is_data_discount_logging_enabled: on } });
  const listed = async () =>
    (await gw.call('GET', '/models', { key: gw.keys.api_key })).body.data.map((m: { id: string }) => m.id);

  before(async () => {
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: {
        ...upstreamEnv(up),
        COHORT_PROVIDER_GROQ_API_KEY: 'sk-groq-shared',
        COHORT_PROVIDER_OPENAI_DATA_COLLECTION: 'allow',
      },
    });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('off (the default): the marked endpoint is not routed to, and says why; unmarked ones are', async () => {
    const res = await ask('openai/gpt-4o-mini');
    assert.deepEqual(
      [res.status, res.body.error.message],
      [
        400,
        "provider openai's shared endpoint may log or train on prompts (COHORT_PROVIDER_OPENAI_DATA_COLLECTION=allow) and this workspace does not allow that: turn on is_data_discount_logging_enabled, or add a BYOK credential for openai",
      ],
    );
    assert.equal(up.received.length, 0);
    assert.ok(!(await listed()).includes('openai/gpt-4o-mini'));
    assert.equal((await ask('groq/llama-3.1-8b-instant')).status, 200);
  });

  test('on: the workspace may route to it; off again: not', async () => {
    assert.equal((await setting(true)).status, 200);
    const res = await ask('openai/gpt-4o-mini');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(up.received.at(-1)!.model, 'gpt-4o-mini');
    assert.ok((await listed()).includes('openai/gpt-4o-mini'));
    assert.equal((await setting(false)).status, 200);
    assert.equal((await ask('openai/gpt-4o-mini')).status, 400);
  });

  test("a workspace's own credential for the provider serves it with the setting off", async () => {
    const byok = await gw.call('POST', '/byok', { body: { provider: 'openai', key: 'sk-own-key-0123456789' } });
    assert.equal(byok.status, 201);
    const res = await ask('openai/gpt-4o-mini');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(up.received.at(-1)!.key, 'sk-own-key-0123456789');
  });
});
