import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { Workspace } from './workspaces.schemas.ts';

for (const store of storeMatrix) {
  describe(`workspaces (${store.name})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
    });
    after(() => gw.close());

    test('create returns 201 with every field of the workspace shape', async () => {
      const res = await gw.call('POST', '/workspaces', {
        body: {
          name: 'Research',
          slug: 'research',
          description: 'R&D',
          default_text_model: 'openai/gpt-4o',
          disabled_server_tools: ['service:web_search', 'service:web_search'],
          io_logging_sampling_rate: 0.5,
        },
      });
      assert.equal(res.status, 201);
      const ws = Workspace.parse(res.body.data);
      assert.equal(ws.slug, 'research');
      assert.equal(ws.updated_at, null);
      assert.equal(ws.created_by, gw.keys.user_id);
      assert.deepEqual(ws.disabled_server_tools, ['service:web_search']);
      assert.equal(ws.io_logging_sampling_rate, 0.5);
      assert.equal(ws.default_image_model, null);
      assert.equal(ws.is_observability_io_logging_enabled, false);
      assert.ok(res.headers.get('x-request-id'));
      const again = await gw.call('GET', `/workspaces/${ws.id}`);
      assert.equal(again.body.data.default_guardrail_id, ws.default_guardrail_id);
    });

    test('patch by slug updates only the given fields and sets updated_at; empty tools clear', async () => {
      const res = await gw.call('PATCH', '/workspaces/research', {
        body: { name: 'Research 2', disabled_server_tools: [] },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.name, 'Research 2');
      assert.equal(res.body.data.slug, 'research');
      assert.equal(res.body.data.description, 'R&D');
      assert.equal(res.body.data.disabled_server_tools, null);
      assert.match(res.body.data.updated_at, /^\d{4}-\d\d-\d\dT/);
    });

    test('field bounds are 400 naming the field, and nothing is written', async () => {
      const cases: [unknown, string][] = [
        [{ name: '', slug: 'a' }, 'name'],
        [{ name: 'x'.repeat(101), slug: 'a' }, 'name'],
        [{ name: 'a', slug: 'Bad_Slug' }, 'slug'],
        [{ name: 'a', slug: 'a'.repeat(51) }, 'slug'],
        [{ name: 'a', slug: 'a', description: 'd'.repeat(501) }, 'description'],
        [{ name: 'a', slug: 'a', io_logging_sampling_rate: 0 }, 'io_logging_sampling_rate'],
        [{ name: 'a', slug: 'a', io_logging_sampling_rate: 1.5 }, 'io_logging_sampling_rate'],
        [{ name: 'a', slug: 'a', default_provider_sort: 'fastest' }, 'default_provider_sort'],
        [{ name: 'a', slug: 'a', disabled_server_tools: ['service:teleport'] }, 'disabled_server_tools'],
        [{ name: 'a', slug: 'a', surprise: true }, 'surprise'],
        [{ slug: 'a' }, 'name'],
      ];
      for (const [body, field] of cases) {
        const res = await gw.call('POST', '/workspaces', { body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
        assert.equal(res.body.error.code, 400);
        assert.match(res.body.error.message, new RegExp(`^invalid request parameters: .*${field}`));
      }
      const list = await gw.call('GET', '/workspaces');
      assert.deepEqual(
        list.body.data.map((w: { slug: string }) => w.slug),
        ['default', 'research'],
      );
    });

    test('malformed JSON, wrong content type and duplicate slug are 400', async () => {
      const bad = await gw.call('POST', '/workspaces', { raw: '{"name":' });
      assert.deepEqual(bad.body, { error: { code: 400, message: 'invalid request parameters: body: malformed JSON' } });
      const type = await gw.call('POST', '/workspaces', { raw: 'name=a', headers: { 'content-type': 'text/plain' } });
      assert.equal(type.status, 400);
      const dup = await gw.call('POST', '/workspaces', { body: { name: 'Again', slug: 'research' } });
      assert.equal(dup.status, 400);
      assert.match(dup.body.error.message, /slug/);
    });

    test('auth: no key 401, ordinary key 403, unknown workspace 404', async () => {
      assert.deepEqual((await gw.call('POST', '/workspaces', { key: null, body: {} })).body, {
        error: { code: 401, message: 'missing authentication header' },
      });
      assert.equal((await gw.call('GET', '/workspaces', { key: 'ck-not-a-real-key-at-all-xxxxxxxxxxxx' })).status, 401);
      assert.deepEqual(
        (await gw.call('POST', '/workspaces', { key: gw.keys.api_key, body: { name: 'a', slug: 'a' } })).body,
        {
          error: { code: 403, message: 'only management keys can perform this operation' },
        },
      );
      assert.deepEqual((await gw.call('PATCH', '/workspaces/nope', { body: { name: 'x' } })).body, {
        error: { code: 404, message: 'resource not found: workspace' },
      });
    });

    test('delete removes it; deleting the default leaves the account without one', async () => {
      assert.deepEqual((await gw.call('DELETE', '/workspaces/research')).body, { deleted: true });
      assert.equal((await gw.call('GET', '/workspaces/research')).status, 404);
    });
  });
}
