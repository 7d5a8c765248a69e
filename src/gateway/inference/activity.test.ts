import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';

const today = () => new Date().toISOString().slice(0, 10);

describe('GET /api/v1/activity', () => {
  let gw: TestGateway;
  let other: TestAccount;
  const costs: number[] = [];
  const tokens = { prompt: 0, completion: 0 };
  before(async () => {
    gw = await startTestGateway();
    other = await createTestAccount(gw.ctx.store.db, { name: 'Other' });
    const ask = (key: string, content: string) =>
      gw.call('POST', '/chat/completions', {
        key,
        body: { model: 'local/scripted', messages: [{ role: 'user', content }] },
      });
    for (const content of ['/say one', '/say two words', '/say three more words']) {
      const res = await ask(gw.keys.api_key, content);
      assert.equal(res.status, 200);
      costs.push(res.body.usage.cost);
      tokens.prompt += res.body.usage.prompt_tokens;
      tokens.completion += res.body.usage.completion_tokens;
    }
    // Refused before routing: no model, so not counted.
    assert.equal(
      (
        await gw.call('POST', '/chat/completions', {
          key: gw.keys.api_key,
          body: { model: 'nowhere/none', messages: [{ role: 'user', content: 'x' }] },
        })
      ).status,
      400,
    );
    assert.equal((await ask(other.apiKey, '/say elsewhere')).status, 200);
  });
  after(() => gw.close());

  test("sums the account's served requests per UTC day and model, in OpenRouter's shape", async () => {
    const res = await gw.call('GET', '/activity', { key: gw.keys.management_key });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    const [row] = res.body.data;
    assert.deepEqual(Object.keys(row).sort(), [
      'byok_usage_inference',
      'completion_tokens',
      'date',
      'endpoint_id',
      'model',
      'model_permaslug',
      'prompt_tokens',
      'provider_name',
      'reasoning_tokens',
      'requests',
      'usage',
    ]);
    assert.deepEqual(
      [row.date, row.model, row.provider_name, row.requests, row.byok_usage_inference],
      [today(), 'local/scripted', 'local', 3, 0],
    );
    assert.deepEqual([row.prompt_tokens, row.completion_tokens], [tokens.prompt, tokens.completion]);
    assert.ok(Math.abs(row.usage - costs.reduce((a, b) => a + b, 0)) < 1e-12, `${row.usage} against ${costs}`);
  });

  test('filters to one day or one workspace, and splits per workspace when asked', async () => {
    const day = await gw.call('GET', `/activity?date=${today()}`, { key: gw.keys.management_key });
    assert.deepEqual(
      day.body.data.map((r: { requests: number }) => r.requests),
      [3],
    );
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    assert.deepEqual((await gw.call('GET', `/activity?date=${yesterday}`, { key: gw.keys.management_key })).body, {
      data: [],
    });
    const split = await gw.call('GET', '/activity?group_by=workspace', { key: gw.keys.management_key });
    assert.deepEqual(
      split.body.data.map((r: { workspace_id: string; requests: number }) => [r.workspace_id, r.requests]),
      [[gw.keys.workspace_id, 3]],
    );
    const ws = await gw.call('GET', `/activity?workspace_id=${other.workspaceId}`, { key: gw.keys.management_key });
    assert.deepEqual(ws.body, { data: [] });
  });

  test('another account sees only its own requests; a key without management rights is refused', async () => {
    const mine = await gw.call('GET', '/activity', { key: other.managementKey });
    assert.deepEqual(
      mine.body.data.map((r: { requests: number }) => r.requests),
      [1],
    );
    const standard = await gw.call('GET', '/activity', { key: gw.keys.api_key });
    assert.deepEqual(
      [standard.status, standard.body],
      [403, { error: { code: 403, message: 'only management keys can perform this operation' } }],
    );
    assert.equal((await gw.call('GET', '/activity', { key: null })).status, 401);
  });

  test('bad query parameters are named', async () => {
    for (const [query, field] of [
      ['date=2026-13-45', 'date'],
      ['date=yesterday', 'date'],
      ['workspace_id=nope', 'workspace_id'],
      ['group_by=model', 'group_by'],
      ['limit=5', 'limit'],
    ]) {
      const res = await gw.call('GET', `/activity?${query}`, { key: gw.keys.management_key });
      assert.equal(res.status, 400, query);
      assert.match(res.body.error.message, new RegExp(`^invalid request parameters: ${field}`), query);
    }
  });
});
