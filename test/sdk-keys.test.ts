// Compatibility: the official @openrouter/sdk client drives the keys and guardrails APIs and reads
// the answers through its own models (it validates every response against its schemas).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { hashKey } from '../src/gateway/crypto/keys.ts';

describe('@openrouter/sdk against the keys and guardrails APIs', () => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  before(async () => {
    gw = await startTestGateway();
    sdk = new OpenRouter({ apiKey: gw.keys.management_key, serverURL: gw.url });
  });
  after(() => gw.close());

  test('keys: create, list, get, update, the current key, delete', async () => {
    const made = await sdk.apiKeys.create({
      requestBody: { name: 'svc', limit: 3, limitReset: 'weekly', includeByokInLimit: true },
    });
    assert.equal(made.data.hash, hashKey(made.key));
    assert.equal(made.data.limit, 3);
    assert.equal(made.data.limitReset, 'weekly');
    assert.equal(made.data.limitRemaining, 3);
    const list = await sdk.apiKeys.list();
    assert.ok(list.data.some((k) => k.hash === made.data.hash));
    assert.equal((await sdk.apiKeys.get({ hash: made.data.hash })).data.name, 'svc');
    const up = await sdk.apiKeys.update({ hash: made.data.hash, requestBody: { name: 'svc2', disabled: true } });
    assert.deepEqual([up.data.name, up.data.disabled], ['svc2', true]);
    await sdk.apiKeys.update({ hash: made.data.hash, requestBody: { disabled: false } });
    const mine = await new OpenRouter({ apiKey: made.key, serverURL: gw.url }).apiKeys.getCurrentKeyMetadata();
    assert.deepEqual([mine.data.label, mine.data.limit, mine.data.isManagementKey], [made.data.label, 3, false]);
    assert.deepEqual(await sdk.apiKeys.delete({ hash: made.data.hash }), { deleted: true });
  });

  test('guardrails: create, list, get, update, assign keys and members, list assignments, delete', async () => {
    const g = await sdk.guardrails.create({
      createGuardrailRequest: {
        name: 'team',
        limitUsd: 10,
        resetInterval: 'monthly',
        allowedModels: ['local/scripted'],
      },
    });
    assert.deepEqual(
      [g.data.limitUsd, g.data.resetInterval, g.data.allowedModels],
      [10, 'monthly', ['local/scripted']],
    );
    const page = await sdk.guardrails.list();
    assert.equal(page.result.totalCount, 1);
    assert.equal((await sdk.guardrails.get({ id: g.data.id })).data.name, 'team');
    const up = await sdk.guardrails.update({ id: g.data.id, updateGuardrailRequest: { enforceZdr: true } });
    assert.equal(up.data.enforceZdr, true);
    const hash = hashKey(gw.keys.api_key);
    assert.deepEqual(
      await sdk.guardrails.bulkAssignKeys({ id: g.data.id, bulkAssignKeysRequest: { keyHashes: [hash] } }),
      { assignedCount: 1 },
    );
    assert.deepEqual(
      await sdk.guardrails.bulkAssignMembers({
        id: g.data.id,
        bulkAssignMembersRequest: { memberUserIds: [gw.keys.user_id] },
      }),
      { assignedCount: 1 },
    );
    const keys = await sdk.guardrails.listGuardrailKeyAssignments({ id: g.data.id });
    assert.deepEqual(
      keys.result.data.map((a) => a.keyHash),
      [hash],
    );
    assert.deepEqual(await sdk.guardrails.delete({ id: g.data.id }), { deleted: true });
  });
});
