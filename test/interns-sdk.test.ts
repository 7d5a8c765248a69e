// The official @openrouter/sdk against our intern routes: every lifecycle call and a streamed
// chat turn parse with its own models (our namespace `service` is the documented difference).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';

describe('@openrouter/sdk against the intern routes', () => {
  let f: InternFixture;
  let sdk: OpenRouter;
  before(async () => {
    f = await startInternFixture();
    sdk = new OpenRouter({ apiKey: f.gw.keys.api_key, serverURL: f.gw.url });
  });
  after(() => f.close());

  test('create, list, get, update, provision, chat, suspend, delete', async () => {
    const created = await sdk.interns.createIntern({
      idempotencyKey: 'sdk-1',
      createInternRequest: {
        name: 'sdk',
        instructions: 'be kind',
        provision: false,
        workspaceId: f.gw.keys.workspace_id,
      },
    });
    assert.equal(created.status, 'queued');
    assert.equal(created.workspaceId, f.gw.keys.workspace_id);
    const again = await sdk.interns.createIntern({
      idempotencyKey: 'sdk-1',
      createInternRequest: {
        name: 'sdk',
        instructions: 'be kind',
        provision: false,
        workspaceId: f.gw.keys.workspace_id,
      },
    });
    assert.equal(again.id, created.id);
    const list = await sdk.interns.listInterns({ limit: 10, status: ['queued'] });
    assert.deepEqual(
      list.data.map((i) => i.id),
      [created.id],
    );
    assert.equal(list.hasMore, false);
    assert.equal((await sdk.interns.getIntern({ internId: created.id })).instructions, 'be kind');
    const updated = await sdk.interns.updateIntern({
      internId: created.id,
      updateInternRequest: { description: 'via sdk', model: 'local/scripted' },
    });
    assert.equal(updated.description, 'via sdk');
    assert.deepEqual(await sdk.interns.provisionIntern({ internId: created.id }), { provisioning: true });
    await f.gw.ctx.interns.idle();
    assert.equal((await sdk.interns.getIntern({ internId: created.id })).status, 'running');
    const res = await sdk.interns.chat({
      internId: created.id,
      internChatCompletionRequest: { stream: true, messages: [{ role: 'user', content: '/say from the sdk' }] },
    });
    let text = '';
    let sessionId: string | null | undefined;
    assert.ok(Symbol.asyncIterator in res.result);
    for await (const chunk of res.result) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (!chunk.choices.length) sessionId = chunk.sessionId;
    }
    assert.equal(text, 'from the sdk');
    assert.ok(sessionId);
    assert.deepEqual(await sdk.interns.suspendIntern({ internId: created.id }), { suspended: true });
    assert.deepEqual(await sdk.interns.deleteIntern({ internId: created.id, deleteInternRequest: {} }), {
      deleting: true,
    });
    await f.gw.ctx.interns.idle();
    await assert.rejects(
      sdk.interns.getIntern({ internId: created.id }),
      (e: { statusCode?: number }) => e.statusCode === 404,
    );
  });

  test('provision, suspend and delete refuse a body carrying a field', async () => {
    const id = (await f.gw.call('POST', '/interns', { body: { name: 'nobody' } })).body.id;
    for (const [method, path] of [
      ['POST', `/interns/${id}/provision`],
      ['POST', `/interns/${id}/suspend`],
      ['DELETE', `/interns/${id}`],
    ] as const) {
      const r = await f.gw.call(method, path, { body: { force: true } });
      assert.equal(r.status, 400, path);
      assert.match(r.body.error.message, /force/);
    }
    assert.equal((await f.gw.call('GET', `/interns/${id}`)).body.status, 'queued');
    // An empty body sent as JSON (as many clients label every request) is no body.
    const suspended = await f.gw.call('POST', `/interns/${id}/suspend`, { raw: '' });
    assert.deepEqual([suspended.status, suspended.body], [200, { suspended: true }]);
    const deleting = await f.gw.call('DELETE', `/interns/${id}`, { raw: '' });
    assert.deepEqual([deleting.status, deleting.body], [202, { deleting: true }]);
  });
});
