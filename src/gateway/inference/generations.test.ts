import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { listKeys } from '../access/identity-store.ts';

describe('reading the request log: /generation, /generation/content, /generations', () => {
  let gw: TestGateway;
  let other: TestAccount;
  let sibling: TestAccount;
  let ownKeyId: string;
  const ids: Record<string, string> = {};
  const chat = (key: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
    gw.call('POST', '/chat/completions', {
      key,
      headers,
      body: { model: 'local/scripted', messages: [{ role: 'user', content: '/say hello there' }], ...body },
    });

  before(async () => {
    gw = await startTestGateway();
    other = await createTestAccount(gw.ctx.store.db, { name: 'Other' });
    sibling = await createTestAccount(gw.ctx.store.db, { name: 'Sibling', orgId: gw.keys.org_id });
    ownKeyId = (await listKeys(gw.ctx.store.db, gw.keys.org_id)).find(
      (k) => k.kind === 'standard' && k.creatorUserId === gw.keys.user_id,
    )!.id;
    const on = await gw.call('PATCH', `/workspaces/${gw.keys.workspace_id}`, {
      key: gw.keys.management_key,
      body: { is_observability_io_logging_enabled: true, io_logging_sampling_rate: 1 },
    });
    assert.equal(on.status, 200);
    const a = await chat(gw.keys.api_key, { session_id: 'sess-1', user: 'end-user-7', metadata: { team: 'blue' } });
    assert.equal(a.status, 200);
    ids.logged = a.body.id;
    const b = await chat(gw.keys.api_key, { stream: true }, { 'x-session-id': 'sess-header' });
    assert.equal(b.status, 200);
    ids.streamed = /"id":"(gen-[^"]+)"/.exec(String(b.body))![1]!;
    const c = await chat(sibling.apiKey, { session_id: 'sess-1' });
    ids.sibling = c.body.id;
    ids.other = (await chat(other.apiKey, {})).body.id;
  });
  after(() => gw.close());

  test("a generation reads back in the official SDK's shape, with its session, user and metadata", async () => {
    const sdk = new OpenRouter({ apiKey: gw.keys.api_key, serverURL: gw.url });
    const g = await sdk.generations.getGeneration({ id: ids.logged! });
    assert.equal(g.data.id, ids.logged);
    assert.equal(g.data.model, 'local/scripted');
    assert.equal(g.data.providerName, 'local');
    assert.equal(g.data.sessionId, 'sess-1');
    assert.equal(g.data.externalUser, 'end-user-7');
    assert.equal(g.data.streamed, false);
    assert.equal(g.data.finishReason, 'stop');
    assert.ok(g.data.tokensPrompt! > 0 && g.data.tokensCompletion! > 0);
    assert.ok(g.data.totalCost >= 0 && g.data.latency! >= 0);
    const raw = await gw.call('GET', `/generation?id=${ids.logged}`, { key: gw.keys.api_key });
    assert.deepEqual(
      [raw.body.data.status, raw.body.data.error, raw.body.data.metadata, raw.body.data.endpoint_id],
      [200, null, { team: 'blue' }, 'local:local/scripted'],
    );
    const content = await sdk.generations.listGenerationContent({ id: ids.logged! });
    assert.deepEqual(content.data.input, { messages: [{ role: 'user', content: '/say hello there' }] });
    assert.deepEqual(content.data.output, { completion: 'hello there', reasoning: null });
    assert.equal(content.data.error, null);
  });

  test('a streamed response is collected for its content; the session may come from x-session-id', async () => {
    const g = await gw.call('GET', `/generation?id=${ids.streamed}`, { key: gw.keys.api_key });
    assert.deepEqual([g.status, g.body.data.session_id, g.body.data.streamed], [200, 'sess-header', true]);
    const c = await gw.call('GET', `/generation/content?id=${ids.streamed}`, { key: gw.keys.api_key });
    assert.deepEqual(c.body.data.output, { completion: 'hello there', reasoning: null });
  });

  test("one account cannot read another's generations or bodies; an ordinary key reads only its own", async () => {
    for (const path of ['/generation', '/generation/content']) {
      const foreign = await gw.call('GET', `${path}?id=${ids.other}`, { key: gw.keys.management_key });
      assert.deepEqual(
        [foreign.status, foreign.body],
        [404, { error: { code: 404, message: `resource not found: generation ${ids.other}` } }],
      );
      assert.equal((await gw.call('GET', `${path}?id=${ids.logged}`, { key: other.managementKey })).status, 404);
      assert.equal((await gw.call('GET', `${path}?id=${ids.logged}`, { key: other.apiKey })).status, 404);
      // Same account, another ordinary key: not its request.
      assert.equal((await gw.call('GET', `${path}?id=${ids.logged}`, { key: sibling.apiKey })).status, 404);
    }
    assert.equal((await gw.call('GET', `/generation?id=${ids.sibling}`, { key: gw.keys.management_key })).status, 200);
    const mine = await gw.call('GET', '/generations', { key: gw.keys.api_key });
    assert.deepEqual(
      mine.body.data.map((g: { id: string }) => g.id),
      [ids.streamed, ids.logged],
    );
    const foreignList = await gw.call('GET', '/generations', { key: other.managementKey });
    assert.deepEqual(
      foreignList.body.data.map((g: { id: string }) => g.id),
      [ids.other],
    );
    assert.equal((await gw.call('GET', `/generation?id=${ids.logged}`, { key: null })).status, 401);
  });

  test('a management key lists and filters by key, model, session and time, page by page', async () => {
    const list = (q: string) =>
      gw
        .call('GET', `/generations?${q}`, { key: gw.keys.management_key })
        .then((r) => (r.status === 200 ? r.body.data.map((g: { id: string }) => g.id) : r.status));
    assert.deepEqual(await list(''), [ids.sibling, ids.streamed, ids.logged]);
    assert.deepEqual(await list('session_id=sess-1'), [ids.sibling, ids.logged]);
    assert.deepEqual(await list(`api_key_id=${ownKeyId}`), [ids.streamed, ids.logged]);
    assert.deepEqual(await list('model=local/scripted&limit=1'), [ids.sibling]);
    assert.deepEqual(await list('model=openai/gpt-5'), []);
    assert.deepEqual(await list(`from=${new Date(Date.now() + 60_000).toISOString()}`), []);
    assert.deepEqual(await list(`to=${new Date(Date.now() + 60_000).toISOString()}&session_id=sess-header`), [
      ids.streamed,
    ]);
    const page = await gw.call('GET', '/generations?limit=2', { key: gw.keys.management_key });
    assert.equal(page.body.next_cursor, ids.streamed);
    assert.deepEqual(await list(`limit=2&before=${page.body.next_cursor}`), [ids.logged]);
    for (const [q, field] of [
      ['from=yesterday', 'from'],
      ['api_key_id=nope', 'api_key_id'],
      ['limit=0', 'limit'],
      ['colour=red', 'colour'],
    ]) {
      const res = await gw.call('GET', `/generations?${q}`, { key: gw.keys.management_key });
      assert.equal(res.status, 400, q);
      assert.match(res.body.error.message, new RegExp(`^invalid request parameters: ${field}`), q);
    }
  });

  test('bodies are kept only for the keys I/O logging names; the rest have a record but no content', async () => {
    const only = await gw.call('PATCH', `/workspaces/${gw.keys.workspace_id}`, {
      key: gw.keys.management_key,
      body: { io_logging_api_key_ids: [sibling.managementKeyId] },
    });
    assert.equal(only.status, 200);
    await gw.ctx.inference.invalidate();
    const id = (await chat(gw.keys.api_key, {})).body.id;
    assert.equal((await gw.call('GET', `/generation?id=${id}`, { key: gw.keys.api_key })).status, 200);
    const c = await gw.call('GET', `/generation/content?id=${id}`, { key: gw.keys.api_key });
    assert.deepEqual(
      [c.status, c.body.error.message],
      [404, `resource not found: content of generation ${id}: its bodies were not logged, or are no longer kept`],
    );
  });

  test('metadata and x-session-id out of bounds are refused, naming the field', async () => {
    for (const [body, headers, field] of [
      [{ metadata: { team: 7 } }, undefined, 'metadata.team'],
      [{ metadata: ['a'] }, undefined, 'metadata'],
      // The request options' one schema names the offending key (request-options.schemas.ts).
      [{ metadata: { ['k'.repeat(129)]: 'v' } }, undefined, `metadata.${'k'.repeat(129)}`],
      [{ metadata: { team: 'x'.repeat(2049) } }, undefined, 'metadata.team'],
      [{}, { 'x-session-id': 's'.repeat(257) }, 'x-session-id'],
    ] as const) {
      const res = await chat(gw.keys.api_key, body, headers);
      assert.equal(res.status, 400, field);
      assert.match(res.body.error.message, new RegExp(`^invalid request parameters: ${field.replace('.', '\\.')}:`));
    }
  });

  test("a preset's metadata is the request's unless it brings its own", async () => {
    const preset = await gw.call('POST', '/presets/observed/chat/completions', {
      body: {
        model: 'local/scripted',
        metadata: { team: 'preset-team', gone: null },
        messages: [{ role: 'user', content: 'x' }],
      },
    });
    assert.equal(preset.status, 200, JSON.stringify(preset.body));
    const viaPreset = (await chat(gw.keys.api_key, { model: '@preset/observed' })).body.id;
    const own = (await chat(gw.keys.api_key, { model: '@preset/observed', metadata: { team: 'mine' } })).body.id;
    const read = async (id: string) =>
      (await gw.call('GET', `/generation?id=${id}`, { key: gw.keys.api_key })).body.data.metadata;
    assert.deepEqual(await read(viaPreset), { team: 'preset-team' });
    assert.deepEqual(await read(own), { team: 'mine' });
  });
});
