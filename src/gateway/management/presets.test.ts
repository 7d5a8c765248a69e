import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { count } from 'drizzle-orm';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';
import { Preset, PresetVersion, PresetWithVersion } from './presets.schemas.ts';
import { presetVersions } from '../store/schema.ts';
import { setDefaultWorkspace } from '../access/identity-store.ts';

for (const store of storeMatrix) {
  describe(`presets (${store.name})`, () => {
    let gw: TestGateway;
    let other: TestAccount;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      other = await createTestAccount(gw.ctx.store.db, { name: 'other' });
    });
    after(() => gw.close());

    const versionCount = async () => (await gw.ctx.store.db.select({ n: count() }).from(presetVersions))[0]!.n;

    test('messages body creates version 1: system becomes system_prompt, config fields persisted, the rest ignored', async () => {
      const res = await gw.call('POST', '/presets/support-bot/messages', {
        body: {
          model: 'openai/gpt-4o',
          max_tokens: 512,
          system: 'You are helpful.',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
          prompt: 'x',
          user: 'end-user-1',
        },
      });
      assert.equal(res.status, 200);
      const p = PresetWithVersion.parse(res.body.data);
      assert.equal(p.slug, 'support-bot');
      assert.equal(p.name, 'support-bot');
      assert.equal(p.status, 'active');
      assert.equal(p.workspace_id, gw.keys.workspace_id);
      assert.equal(p.creator_user_id, gw.keys.user_id);
      assert.equal(p.designated_version_id, p.designated_version!.id);
      assert.deepEqual(
        { ...p.designated_version!, id: '', created_at: '', updated_at: '' },
        {
          id: '',
          preset_id: p.id,
          version: 1,
          system_prompt: 'You are helpful.',
          config: { model: 'openai/gpt-4o', max_tokens: 512, user: 'end-user-1' },
          creator_id: gw.keys.user_id,
          created_at: '',
          updated_at: '',
        },
      );
    });

    test('chat and responses bodies add versions 2 and 3; the newest is designated', async () => {
      const chat = await gw.call('POST', '/presets/support-bot/chat/completions', {
        body: {
          model: 'openai/gpt-4o-mini',
          messages: [
            { role: 'system', content: 'Sys' },
            { role: 'developer', content: 'Dev' },
            { role: 'user', content: 'q' },
          ],
          max_completion_tokens: 64,
        },
      });
      assert.equal(chat.status, 200);
      assert.equal(chat.body.data.designated_version.version, 2);
      assert.equal(chat.body.data.designated_version.system_prompt, 'Sys\n\nDev');
      const resp = await gw.call('POST', '/presets/support-bot/responses', {
        body: { model: 'x/y', instructions: 'Inst', input: 'hello', max_output_tokens: 32 },
      });
      assert.equal(resp.status, 200);
      assert.deepEqual(resp.body.data.designated_version.config, { model: 'x/y', max_tokens: 32 });
      const got = await gw.call('GET', '/presets/support-bot');
      assert.equal(got.body.data.designated_version.version, 3);
      assert.equal(got.body.data.id, chat.body.data.id);
    });

    test('list presets, list versions newest first, get one version', async () => {
      const list = await gw.call('GET', '/presets');
      assert.equal(list.status, 200);
      assert.equal(list.body.total_count, 1);
      Preset.strict().parse(list.body.data[0]);
      const versions = await gw.call('GET', '/presets/support-bot/versions?limit=2');
      assert.equal(versions.body.total_count, 3);
      assert.deepEqual(
        versions.body.data.map((v: PresetVersion) => v.version),
        [3, 2],
      );
      const page2 = await gw.call('GET', '/presets/support-bot/versions?limit=2&offset=2');
      assert.deepEqual(
        page2.body.data.map((v: PresetVersion) => v.version),
        [1],
      );
      const one = await gw.call('GET', '/presets/support-bot/versions/1');
      assert.equal(one.status, 200);
      assert.equal(PresetVersion.parse(one.body.data).system_prompt, 'You are helpful.');
      assert.deepEqual((await gw.call('GET', '/presets/support-bot/versions/9')).body, {
        error: { code: 404, message: 'resource not found: preset version' },
      });
      assert.equal((await gw.call('GET', '/presets/support-bot/versions/0')).status, 400);
      assert.match(
        (await gw.call('GET', '/presets/support-bot/versions/abc')).body.error.message,
        /^invalid request parameters: version: /,
      );
      assert.deepEqual((await gw.call('GET', '/presets/nope')).body, {
        error: { code: 404, message: 'resource not found: preset' },
      });
      assert.equal((await gw.call('GET', '/presets/nope/versions')).status, 404);
      assert.equal((await gw.call('GET', '/presets?limit=0')).status, 400);
    });

    test('bounds and bad bodies are 400 naming the field, and write nothing', async () => {
      const before = await versionCount();
      const cases: [string, unknown, string][] = [
        ['messages', { fallbacks: [{ model: 'a' }, { model: 'b' }, { model: 'c' }, { model: 'd' }] }, 'fallbacks'],
        ['messages', { fallbacks: [{ model: 'a' }], models: ['b'] }, 'fallbacks'],
        ['messages', { user: 'u'.repeat(257) }, 'user'],
        ['chat', { session_id: 's'.repeat(257) }, 'session_id'],
        ['responses', { route: 'fallbacks' }, 'route'],
        ['messages', { max_tokens: 'many' }, 'max_tokens'],
        ['chat', { messages: [{ role: 'system', content: { not: 'text' } }] }, 'messages.0.content'],
        ['messages', 'a string', 'body'],
      ];
      for (const [style, body, field] of cases) {
        const res = await gw.call('POST', `/presets/support-bot/${style === 'chat' ? 'chat/completions' : style}`, {
          body,
        });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
        assert.ok(res.body.error.message.startsWith(`invalid request parameters: ${field}`), res.body.error.message);
      }
      for (const bad of ['not%20url%20safe', 'a%2Fb', '%C3%A9t%C3%A9', '...', 's'.repeat(101)]) {
        const slug = await gw.call('POST', `/presets/${bad}/messages`, { body: { model: 'a/b' } });
        assert.equal(slug.status, 400, bad);
        assert.match(slug.body.error.message, /^invalid request parameters: slug: /, bad);
      }
      assert.equal((await gw.call('POST', '/presets/support-bot/messages', { raw: '{"model":' })).status, 400);
      assert.equal(await versionCount(), before);
    });

    test('concurrent creates get distinct consecutive versions (or the documented 409)', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => gw.call('POST', '/presets/busy/messages', { body: { model: `m/${i}` } })),
      );
      const ok = results.filter((r) => r.status === 200);
      for (const r of results) {
        if (r.status !== 200)
          assert.deepEqual(r.body, { error: { code: 409, message: 'resource conflict, try again later' } });
      }
      const versions = ok.map((r) => r.body.data.designated_version.version as number).sort((a, b) => a - b);
      assert.deepEqual(
        versions,
        Array.from({ length: ok.length }, (_, i) => i + 1),
      );
      assert.ok(ok.length >= 1);
      const list = await gw.call('GET', '/presets/busy/versions?limit=100');
      assert.equal(list.body.total_count, ok.length);
      assert.equal((await gw.call('GET', '/presets/busy')).body.data.designated_version.version, ok.length);
    });

    test('any URL-safe slug: unreserved characters, case-sensitive, usable as @preset/<slug>', async () => {
      for (const slug of ['My_Preset.v2~beta', 'my_preset', 'a--b', 'UPPER']) {
        const res = await gw.call('POST', `/presets/${slug}/messages`, {
          body: { model: 'local/scripted', system: `I am ${slug}.` },
        });
        assert.equal(res.status, 200, slug);
        assert.equal(res.body.data.slug, slug);
        assert.equal(
          (await gw.call('GET', `/presets/${slug}`)).body.data.designated_version.system_prompt,
          `I am ${slug}.`,
        );
      }
      assert.equal((await gw.call('GET', '/presets/upper')).status, 404);
      const viaModel = await gw.call('POST', '/chat/completions', {
        key: gw.keys.api_key,
        body: { model: '@preset/My_Preset.v2~beta', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(viaModel.status, 200);
      assert.equal(viaModel.body.model, 'local/scripted');
    });

    test("another account's preset is 404; its own slug space is separate", async () => {
      assert.equal((await gw.call('GET', '/presets/support-bot', { key: other.managementKey })).status, 404);
      assert.equal((await gw.call('GET', '/presets/support-bot/versions/1', { key: other.managementKey })).status, 404);
      const mine = await gw.call('POST', '/presets/support-bot/messages', {
        key: other.managementKey,
        body: { model: 'o/m' },
      });
      assert.equal(mine.body.data.designated_version.version, 1);
      assert.equal(mine.body.data.workspace_id, other.workspaceId);
      assert.equal((await gw.call('GET', '/presets', { key: other.managementKey })).body.total_count, 1);
    });

    test('a key whose workspace is gone cannot address presets (400)', async () => {
      await setDefaultWorkspace(gw.ctx.store.db, { orgId: gw.keys.org_id, workspaceId: null });
      gw.ctx.auth.invalidate();
      const res = await gw.call('GET', '/presets');
      assert.equal(res.status, 400);
      assert.match(res.body.error.message, /^invalid request parameters: workspace: /);
      await setDefaultWorkspace(gw.ctx.store.db, { orgId: gw.keys.org_id, workspaceId: gw.keys.workspace_id });
      gw.ctx.auth.invalidate();
    });
  });
}
