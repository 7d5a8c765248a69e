import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { Intern } from './interns.schemas.ts';
import { addMember, createKey, createOrganization, createUser, removeMember } from '../access/identity-store.ts';
import { createTestAccount } from '../../../test/helpers/accounts.ts';
import { sql } from 'drizzle-orm';

for (const store of storeMatrix) {
  describe(`intern lifecycle routes (${store.name})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
    });
    after(() => gw.close());

    test('create is 201 with every field of the intern shape and no secret', async () => {
      const res = await gw.call('POST', '/interns', {
        body: { name: 'ada', description: 'd', instructions: 'be brief', model: 'local/scripted' },
      });
      assert.equal(res.status, 201);
      const i = Intern.parse(res.body);
      assert.deepEqual(Object.keys(res.body).sort(), Object.keys(Intern.shape).sort());
      assert.equal(i.status, 'queued');
      assert.equal(i.progress, null);
      assert.equal(i.hostname, null);
      assert.equal(i.workspace_id, gw.keys.workspace_id);
      assert.ok(i.vault_id);
      assert.doesNotMatch(JSON.stringify(res.body), /ck-/);
    });

    test('Idempotency-Key: a retried create returns the same intern; another body with it is 400', async () => {
      const headers = { 'idempotency-key': 'create-bob-1' };
      const a = await gw.call('POST', '/interns', { body: { name: 'bob' }, headers });
      const b = await gw.call('POST', '/interns', { body: { name: 'bob' }, headers });
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      assert.equal(b.body.id, a.body.id);
      const c = await gw.call('POST', '/interns', { body: { name: 'bobby' }, headers });
      assert.equal(c.status, 400);
      assert.match(c.body.error.message, /Idempotency-Key/);
      const empty = await gw.call('POST', '/interns', {
        body: { name: 'x' },
        headers: { 'idempotency-key': 'k'.repeat(256) },
      });
      assert.equal(empty.status, 400);
      // The same person, key and body through a key of another workspace is another request.
      const db = gw.ctx.store.db;
      const elsewhere = (await gw.call('POST', '/workspaces', { body: { name: 'Elsewhere', slug: 'elsewhere' } })).body
        .data.id;
      const there = (
        await createKey(db, {
          orgId: gw.keys.org_id,
          creatorUserId: gw.keys.user_id,
          kind: 'standard',
          workspaceId: elsewhere,
        })
      ).raw;
      const d = await gw.call('POST', '/interns', { key: there, body: { name: 'bob' }, headers });
      assert.deepEqual(
        [d.status, d.body.error],
        [
          400,
          {
            code: 400,
            message:
              'invalid request parameters: Idempotency-Key: already used for a different request (another body or workspace)',
            metadata: { reason: 'bad_request', retryable: false },
          },
        ],
      );
    });

    test('duplicate name is 409; bad fields are 400 naming the field with metadata', async () => {
      const dup = await gw.call('POST', '/interns', { body: { name: 'ada' } });
      assert.equal(dup.status, 409);
      const cases: [unknown, string][] = [
        [{}, 'name'],
        [{ name: '' }, 'name'],
        [{ name: 'a', model: 'gpt4' }, 'model'],
        [{ name: 'a', workspace_id: '5b0e2f9c-1111-4111-8111-111111111111' }, 'workspace_id'],
        [{ name: 'a', vault_id: '5b0e2f9c-1111-4111-8111-111111111111' }, 'vault_id'],
        [{ name: 'a', surprise: 1 }, 'surprise'],
        [{ name: 'a', provision: 'yes' }, 'provision'],
      ];
      for (const [body, field] of cases) {
        const res = await gw.call('POST', '/interns', { body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(res.body.error.message, new RegExp(field));
        assert.deepEqual(res.body.error.metadata, { reason: 'bad_request', retryable: false });
      }
    });

    test('list is newest first with cursor pagination and a status filter', async () => {
      const all = await gw.call('GET', '/interns');
      assert.deepEqual(
        all.body.data.map((i: Intern) => i.name),
        ['bob', 'ada'],
      );
      assert.equal(all.body.has_more, false);
      assert.equal('next_cursor' in all.body, false);
      const p1 = await gw.call('GET', '/interns?limit=1');
      assert.equal(p1.body.has_more, true);
      const p2 = await gw.call('GET', `/interns?limit=1&starting_after=${p1.body.next_cursor}`);
      assert.deepEqual(
        p2.body.data.map((i: Intern) => i.name),
        ['ada'],
      );
      assert.equal(p2.body.has_more, false);
      assert.equal((await gw.call('GET', '/interns?status=running,failed')).body.data.length, 0);
      assert.equal((await gw.call('GET', '/interns?status=queued')).body.data.length, 2);
      assert.equal((await gw.call('GET', '/interns?status=running&status=queued')).body.data.length, 2);
      assert.equal((await gw.call('GET', '/interns?status=running&status=failed')).body.data.length, 0);
      assert.equal((await gw.call('GET', '/interns?status=sleeping')).status, 400);
      assert.equal((await gw.call('GET', '/interns?starting_after=nonsense')).status, 400);
      assert.equal((await gw.call('GET', '/interns?limit=501')).status, 400);
    });

    test('pagination lists every intern once when several were created within one millisecond', async () => {
      const acc = await createTestAccount(gw.ctx.store.db, { name: 'pager', orgId: gw.keys.org_id });
      const names = ['p1', 'p2', 'p3', 'p4'];
      const ids: string[] = [];
      for (const name of names)
        ids.push((await gw.call('POST', '/interns', { key: acc.apiKey, body: { name } })).body.id);
      // As concurrent creates on PostgreSQL can be: microseconds apart, within one millisecond.
      for (const [i, id] of ids.entries())
        await gw.ctx.store.db.execute(
          sql`update interns set created_at = ${`2026-11-24T00:00:00.123${i * 2 + 1}00Z`}::timestamptz where id = ${id}`,
        );
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await gw.call('GET', `/interns?limit=1${cursor ? `&starting_after=${cursor}` : ''}`, {
          key: acc.apiKey,
        });
        seen.push(...page.body.data.map((i: Intern) => i.name));
        cursor = page.body.next_cursor;
      } while (cursor);
      assert.deepEqual([...seen].sort(), names);
    });

    test('get, patch; unknown id is 404 not_found', async () => {
      const [ada] = (await gw.call('GET', '/interns?limit=50')).body.data.filter((i: Intern) => i.name === 'ada');
      const got = await gw.call('GET', `/interns/${ada.id}`);
      assert.deepEqual(got.body, ada);
      const patched = await gw.call('PATCH', `/interns/${ada.id}`, {
        body: { model: 'openai/gpt-4o:free', description: null },
      });
      assert.equal(patched.status, 200);
      assert.equal(patched.body.model, 'openai/gpt-4o:free');
      assert.equal(patched.body.description, null);
      // Any model a model request may name: multi-segment model ids, variants, presets.
      for (const model of [
        'inferact-vllm/meta-llama/Llama-3.1-8B',
        'anthropic/2/claude-sonnet-4',
        'openai/gpt-4o:free',
        '@preset/My_Preset.v2',
      ]) {
        const ok = await gw.call('PATCH', `/interns/${ada.id}`, { body: { model } });
        assert.deepEqual([ok.status, ok.body.model], [200, model]);
      }
      for (const model of ['nope', '@preset/', '@preset/..', 'a//b', '/a', 'a/b c']) {
        const bad = await gw.call('PATCH', `/interns/${ada.id}`, { body: { model } });
        assert.equal(bad.status, 400, model);
        assert.match(bad.body.error.message, /^invalid request parameters: model: /, model);
      }
      for (const id of ['nope', '5b0e2f9c-1111-4111-8111-111111111111']) {
        const res = await gw.call('GET', `/interns/${id}`);
        assert.deepEqual(res.body, {
          error: {
            code: 404,
            message: 'resource not found: intern',
            metadata: { reason: 'not_found', retryable: false },
          },
        });
      }
    });

    test('auth: 401 without a key; plain 404 outside the programme on every path; plain 403 for a departed creator', async () => {
      const db = gw.ctx.store.db;
      const org = await createOrganization(db, { name: 'outsiders' });
      const user = await createUser(db, { name: 'out' });
      await addMember(db, { orgId: org.id, userId: user.id });
      const outsider = (await createKey(db, { orgId: org.id, creatorUserId: user.id, kind: 'standard' })).raw;
      const leaver = await createUser(db, { name: 'leaver' });
      await addMember(db, { orgId: gw.keys.org_id, userId: leaver.id });
      const leaverKey = (await createKey(db, { orgId: gw.keys.org_id, creatorUserId: leaver.id, kind: 'standard' }))
        .raw;
      await removeMember(db, { orgId: gw.keys.org_id, userId: leaver.id });
      const id = (await gw.call('GET', '/interns')).body.data[0].id;
      const paths: [string, string, unknown?][] = [
        ['POST', '/interns', { name: 'z' }],
        ['GET', '/interns'],
        ['GET', `/interns/${id}`],
        ['PATCH', `/interns/${id}`, { name: 'z' }],
        ['POST', `/interns/${id}/suspend`],
        ['DELETE', `/interns/${id}`],
        ['POST', `/interns/${id}/chat/completions`, { bad: true }],
        ['POST', '/interns/nope/chat/completions', { messages: [], stream: true }],
        // Paths the router cannot match are checked in the same order.
        ['POST', `/interns/${'i'.repeat(8_193)}/chat/completions`, { messages: [], stream: true }],
        ['GET', '/interns/%E0%A4%A'],
      ];
      for (const [method, path, body] of paths) {
        assert.deepEqual(
          (await gw.call(method, path, { key: outsider, body })).body,
          { error: { code: 404, message: 'resource not found' } },
          path,
        );
        assert.deepEqual((await gw.call(method, path, { key: null, body })).body, {
          error: { code: 401, message: 'missing authentication header' },
        });
        const dep = await gw.call(method, path, { key: leaverKey, body });
        assert.equal(dep.status, 403);
        assert.deepEqual(Object.keys(dep.body.error), ['code', 'message']);
      }
    });

    test('a long or badly encoded intern id: 404 not_found for a long one (no such intern), 400 bad_request with metadata for bad encoding', async () => {
      const stream = { stream: true, messages: [{ role: 'user', content: 'hi' }] };
      for (const path of [`/interns/${'i'.repeat(101)}`, `/interns/${'i'.repeat(5000)}/chat/completions`]) {
        const res = await gw.call(path.endsWith('completions') ? 'POST' : 'GET', path, {
          body: path.endsWith('completions') ? stream : undefined,
        });
        assert.deepEqual(
          res.body,
          {
            error: {
              code: 404,
              message: 'resource not found: intern',
              metadata: { reason: 'not_found', retryable: false },
            },
          },
          path.slice(0, 30),
        );
      }
      for (const [method, path] of [
        ['GET', '/interns/%E0%A4%A'],
        ['POST', '/interns/%E0%A4%A/chat/completions'],
      ] as const) {
        const res = await gw.call(method, path, { body: method === 'POST' ? stream : undefined });
        assert.equal(res.status, 400);
        assert.deepEqual(res.body, {
          error: {
            code: 400,
            message: 'invalid request parameters: path: malformed URL encoding',
            metadata: { reason: 'bad_request', retryable: false },
          },
        });
        assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      }
      const tooLong = await gw.call('GET', `/interns/${'i'.repeat(8_193)}`);
      assert.deepEqual(tooLong.body.error, {
        code: 400,
        message: 'invalid request parameters: path: a path parameter exceeds 8192 characters',
        metadata: { reason: 'bad_request', retryable: false },
      });
    });

    test('provision (202) fails visibly without a daemon binary or reaches running; suspend 200; delete 202 then gone', async () => {
      const created = await gw.call('POST', '/interns', { body: { name: 'carl' } });
      const id = created.body.id;
      assert.deepEqual((await gw.call('POST', `/interns/${id}/provision`)).body, { provisioning: true });
      await gw.ctx.interns.idle();
      const after = (await gw.call('GET', `/interns/${id}`)).body;
      assert.ok(['running', 'failed'].includes(after.status), after.status);
      assert.equal(after.progress, null);
      assert.deepEqual((await gw.call('POST', `/interns/${id}/suspend`)).body, { suspended: true });
      const stopped = (await gw.call('GET', `/interns/${id}`)).body;
      assert.equal(stopped.status, 'stopped');
      assert.equal(stopped.hostname, null);
      const del = await gw.call('DELETE', `/interns/${id}`);
      assert.equal(del.status, 202);
      assert.deepEqual(del.body, { deleting: true });
      await gw.ctx.interns.idle();
      assert.equal((await gw.call('GET', `/interns/${id}`)).status, 404);
    });
  });
}
