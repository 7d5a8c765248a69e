// A U+0000 (or an unpaired surrogate) in a string the database would store is a 400 naming the
// field in the route's own error shape, writes nothing, and leaves the gateway serving (audit
// finding 1). Text that is never stored (a preset body's ignored fields, a model request) keeps
// it; the request log stores its copy with U+FFFD in its place (finding 2).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { count } from 'drizzle-orm';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { byokCredentials, presets, workspaces } from '../store/schema.ts';
import { interns } from '../store/schema-interns.ts';
import { inferenceRequests } from '../store/schema-inference.ts';

const NUL = 'must not contain U+0000 (NUL)';
const management = (detail: string) => ({ error: { code: 400, message: `invalid request parameters: ${detail}` } });
const chat = (detail: string) => ({
  error: { ...management(detail).error, metadata: { reason: 'bad_request', retryable: false } },
});

for (const store of storeMatrix) {
  describe(`strings the database cannot store (${store.name})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
    });
    after(() => gw.close());

    const rows = async () => {
      const db = gw.ctx.store.db;
      const n = async (t: typeof workspaces | typeof presets | typeof byokCredentials | typeof interns) =>
        (await db.select({ n: count() }).from(t))[0]!.n;
      return {
        workspaces: await n(workspaces),
        presets: await n(presets),
        credentials: await n(byokCredentials),
        interns: await n(interns),
      };
    };
    /** Each request gets exactly `expected`, and no row of any table is added. */
    async function refused(cases: [method: string, path: string, body: unknown, expected: unknown][]) {
      const before = await rows();
      for (const [method, path, body, expected] of cases) {
        const res = await gw.call(method, path, { body });
        assert.deepEqual(
          { status: res.status, body: res.body },
          { status: 400, body: expected },
          `${method} ${path} ${JSON.stringify(body)}`,
        );
      }
      assert.deepEqual(await rows(), before);
    }

    test('workspaces: create and patch', async () => {
      await refused([
        ['POST', '/workspaces', { name: 'a\u0000b', slug: 'nul1' }, management(`name: ${NUL}`)],
        [
          'POST',
          '/workspaces',
          { name: 'n', slug: 'nul1', default_text_model: 'a/b\u0000' },
          management(`default_text_model: ${NUL}`),
        ],
        ['PATCH', '/workspaces/default', { description: 'x\u0000y' }, management(`description: ${NUL}`)],
        [
          'PATCH',
          '/workspaces/default',
          { io_logging_api_key_ids: ['ok', 'k\ud800'] },
          management('io_logging_api_key_ids.1: must not contain an unpaired surrogate'),
        ],
      ]);
      const ws = await gw.call('GET', '/workspaces/default');
      assert.equal(ws.body.data.description, null);
      assert.equal(ws.body.data.updated_at, null);
      assert.equal((await gw.call('GET', '/workspaces/nul1')).status, 404);
    });

    test('presets: the system prompt and every configuration string, nested ones included', async () => {
      await refused([
        ['POST', '/presets/nul2/messages', { system: 'x\u0000y' }, management(`system: ${NUL}`)],
        [
          'POST',
          '/presets/nul2/messages',
          { system: [{ type: 'text', text: 'x\u0000y' }] },
          management(`system.0.text: ${NUL}`),
        ],
        ['POST', '/presets/nul3/messages', { model: 'a\u0000b' }, management(`model: ${NUL}`)],
        ['POST', '/presets/nul3/messages', { models: ['a/b', 'c\u0000'] }, management(`models.1: ${NUL}`)],
        [
          'POST',
          '/presets/nul3/messages',
          { response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { extra: ['x\u0000'] } } } },
          management(`response_format.json_schema.schema.extra.0: ${NUL}`),
        ],
        ['POST', '/presets/nul3/messages', { trace: { 'k\u0000': 1 } }, management(`trace: a key ${NUL}`)],
        [
          'POST',
          '/presets/nul3/messages',
          { plugins: [{ id: 'web', engine: 'x\u0000' }] },
          management(`plugins.0.engine: ${NUL}`),
        ],
        [
          'POST',
          '/presets/nul3/messages',
          { provider: { order: ['openai\u0000'] } },
          management(`provider.order.0: ${NUL}`),
        ],
        [
          'POST',
          '/presets/nul3/chat/completions',
          { messages: [{ role: 'system', content: 'x\u0000' }] },
          management(`messages.0.content: ${NUL}`),
        ],
        ['POST', '/presets/nul3/chat/completions', { stop: 'x\u0000' }, management(`stop: ${NUL}`)],
        ['POST', '/presets/nul3/responses', { instructions: 'x\u0000' }, management(`instructions: ${NUL}`)],
      ]);
      assert.equal((await gw.call('GET', '/presets/nul2')).status, 404);
      assert.equal((await gw.call('GET', '/presets/nul3')).status, 404);
    });

    test('presets: a NUL in a field that is not stored is accepted', async () => {
      const res = await gw.call('POST', '/presets/nul-ignored/chat/completions', {
        body: { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'a\u0000b' }] },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.designated_version.system_prompt, '');
    });

    test('credentials: key and name on create, name on update', async () => {
      const created = await gw.call('POST', '/byok', { body: { key: 'sk-valid-0123456789', provider: 'openai' } });
      assert.equal(created.status, 201);
      const id = created.body.data.id;
      await refused([
        [
          'POST',
          '/byok',
          { key: 'k\u0000ey', provider: 'openai', name: 'a\u0000b' },
          management(`key: ${NUL}; name: ${NUL}`),
        ],
        [
          'POST',
          '/byok',
          { key: 'sk-valid-0123456789', provider: 'openai', allowed_user_ids: ['u\u0000'] },
          management(`allowed_user_ids.0: ${NUL}`),
        ],
        ['PATCH', `/byok/${id}`, { name: 'a\u0000b' }, management(`name: ${NUL}`)],
      ]);
      assert.equal((await gw.call('GET', `/byok/${id}`)).body.data.name, null);
    });

    test('interns: create and patch, in the chat routes’ shape', async () => {
      const created = await gw.call('POST', '/interns', { body: { name: 'ok' } });
      assert.equal(created.status, 201);
      await refused([
        ['POST', '/interns', { name: 'a\u0000b' }, chat(`name: ${NUL}`)],
        ['POST', '/interns', { name: 'n', description: 'x\u0000' }, chat(`description: ${NUL}`)],
        ['POST', '/interns', { name: 'n', instructions: 'x\u0000' }, chat(`instructions: ${NUL}`)],
        ['PATCH', `/interns/${created.body.id}`, { instructions: 'x\u0000' }, chat(`instructions: ${NUL}`)],
      ]);
      assert.deepEqual(
        (await gw.call('GET', '/interns')).body.data.map((i: { name: string }) => i.name),
        ['ok'],
      );
      assert.equal((await gw.call('GET', `/interns/${created.body.id}`)).body.instructions, null);
    });

    test('model requests: a NUL in the model or a message is recorded as U+FFFD, and loses no other row of the batch (finding 2)', async () => {
      assert.equal(
        (await gw.call('PATCH', '/workspaces/default', { body: { is_observability_io_logging_enabled: true } })).status,
        200,
      );
      const chat = (body: unknown) => gw.call('POST', '/chat/completions', { key: gw.keys.api_key, body });
      // `user` is a request option that a preset can store, so it is held to the preset's rule on every route.
      const nulUser = await chat({
        model: 'local/scripted',
        user: 'u\u0000x',
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(nulUser.status, 400);
      assert.match(nulUser.body.error.message, /user: must not contain U\+0000/);
      const valid = await chat({ model: 'local/scripted', messages: [{ role: 'user', content: '/say a\u0000b' }] });
      const unknown = await chat({ model: 'local/sc\u0000ripted', messages: [{ role: 'user', content: '/say ab' }] });
      assert.equal(valid.status, 200);
      assert.equal(valid.body.choices[0].message.content, 'a\u0000b');
      assert.equal(unknown.status, 404);
      await gw.ctx.inference.flush();
      const logged = await gw.ctx.store.db.select().from(inferenceRequests);
      const byStatus = new Map(logged.map((r) => [r.status, r]));
      assert.equal(logged.length, 2);
      assert.equal(byStatus.get(200)!.id, valid.body.id);
      assert.equal(byStatus.get(200)!.requestedModel, 'local/scripted');
      assert.deepEqual((byStatus.get(200)!.requestBody as { messages: unknown[] }).messages, [
        { role: 'user', content: '/say a\uFFFDb' },
      ]);
      assert.equal(byStatus.get(404)!.requestedModel, 'local/sc\uFFFDripted');
    });

    test('a NUL that reaches a query anyway (a path parameter) is a 400 too, and the gateway keeps serving', async () => {
      const res = await gw.call('GET', '/workspaces/a%00b');
      assert.deepEqual(
        { status: res.status, body: res.body },
        { status: 400, body: management('a value contains U+0000 (NUL), which the database cannot store') },
      );
      assert.equal((await gw.call('GET', '/workspaces')).status, 200);
    });
  });
}
