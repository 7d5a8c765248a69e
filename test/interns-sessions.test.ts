// An intern's sessions and transcripts over the API (docs/guides/sessions.md): written by the
// gateway as each chat request ends, listed newest first and read a page at a time, by the keys
// that may chat with the intern and no other; bounded; readable while the intern is stopped. A
// real gateway, a real intern daemon and sandbox, the scripted model.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';
import { callOf, tool, user } from './helpers/chat.ts';
import { createTestAccount, type TestAccount } from './helpers/accounts.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { waitFor } from './helpers/wait.ts';

describe('sessions kept by the gateway', { skip: noSandbox }, () => {
  let f: InternFixture;
  let id: string;
  let stranger: TestAccount;
  let neighbour: TestAccount;
  let outsider: TestAccount;
  before(async () => {
    f = await startInternFixture();
    id = await f.intern('history');
    const db = f.gw.ctx.store.db;
    stranger = await createTestAccount(db, { name: 'stranger', internsProgramme: true });
    neighbour = await createTestAccount(db, { name: 'neighbour', orgId: f.gw.keys.org_id, internsProgramme: true });
    outsider = await createTestAccount(db, { name: 'outsider' });
  });
  after(() => f.close());

  const get = async (path: string, key = f.gw.keys.api_key) => {
    const res = await fetch(`${f.gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** The transcript is written as the request ends, just after its [DONE]: read until it holds `entries`. */
  const transcript = (session: string, entries: number, query = '') =>
    waitFor(
      `session ${session} holds ${entries} entries`,
      async () => {
        const r = await get(`/interns/${id}/sessions/${encodeURIComponent(session)}${query}`);
        return r.status === 200 && r.body.session.entries >= entries ? r : null;
      },
      { everyMs: 50 },
    );
  const shape = (entries: any[]) => entries.map(({ at, seq, ...rest }) => rest);

  test('a turn, a command and a question: each request’s entries, in order, with how it ended', async () => {
    const a = await f.chat(id, user('/say hello there', { session_id: 'sess-a' }));
    assert.equal(a.status, 200);
    const r = await transcript('sess-a', 3);
    assert.equal(r.body.session.id, 'sess-a');
    assert.equal(r.body.session.intern_id, id);
    assert.equal(r.body.session.title, '/say hello there');
    assert.equal(r.body.session.state, 'completed');
    assert.equal(r.body.has_more, false);
    assert.equal(r.body.next_cursor, undefined);
    const end = r.body.data[2];
    assert.deepEqual(shape(r.body.data), [
      { type: 'user', content: '/say hello there', approval_mode: 'self-drive', steered: false, truncated: false },
      { type: 'assistant', content: 'hello there', truncated: false },
      { type: 'end', finish_reason: 'stop', model: 'local/scripted', usage: end.usage, omitted: 0 },
    ]);
    assert.equal(typeof end.usage.total_tokens, 'number');
    assert.deepEqual(
      r.body.data.map((e: any) => e.seq),
      [1, 2, 3],
    );
    assert.ok(Date.parse(r.body.data[0].at) <= Date.parse(end.at));

    // A command: its summary, and the text after it, continue the same session.
    await f.chat(id, user('/shell echo from-shell', { session_id: 'sess-a' }));
    const b = await transcript('sess-a', 7);
    const entries = shape(b.body.data.slice(3));
    assert.deepEqual(entries[0], {
      type: 'user',
      content: '/shell echo from-shell',
      approval_mode: 'self-drive',
      steered: false,
      truncated: false,
    });
    const call = entries.find((e: any) => e.type === 'tool');
    assert.deepEqual(call, {
      type: 'tool',
      tool: {
        id: call.tool.id,
        title: 'shell',
        kind: 'execute',
        status: 'completed',
        input: 'echo from-shell',
        output: 'from-shell\n[exit 0]',
      },
    });
    assert.equal(entries.at(-1).type, 'end');

    // A question pauses the run; the answer, in a second request, continues it.
    const q = await f.chat(id, user('/ask your name?', { session_id: 'sess-q' }));
    const call2 = callOf(q);
    const paused = await transcript('sess-q', 4);
    assert.equal(paused.body.session.state, 'paused');
    // The agent's own ask_user call shows as a tool, then the question the run paused on.
    assert.deepEqual(
      paused.body.data.map((e: any) => e.type),
      ['user', 'tool', 'interaction', 'end'],
    );
    assert.deepEqual(shape(paused.body.data.slice(2)), [
      { type: 'interaction', interaction_id: call2.id, interaction: JSON.parse(call2.function.arguments) },
      {
        type: 'end',
        finish_reason: 'tool_calls',
        model: 'local/scripted',
        usage: paused.body.data[3].usage,
        omitted: 0,
      },
    ]);
    const answer = JSON.stringify({ action: 'accept', content: { answer: 'Ada' } });
    const done = await f.chat(id, tool('sess-q', call2.id, answer));
    assert.equal(done.status, 200);
    const answered = await transcript('sess-q', 6);
    assert.deepEqual(shape(answered.body.data)[4], {
      type: 'answer',
      interaction_id: call2.id,
      content: answer,
      truncated: false,
    });
    assert.equal(answered.body.data.at(-1).type, 'end');
    assert.equal(answered.body.session.state, 'completed');
  });

  test('the list: newest first, a page at a time; a refused request makes no session', async () => {
    await f.chat(id, user('/say third', { session_id: 'sess-c' }));
    await transcript('sess-c', 3);
    const first = await get(`/interns/${id}/sessions?limit=2`);
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.data.map((s: any) => s.id),
      ['sess-c', 'sess-q'],
    );
    assert.equal(first.body.has_more, true);
    const second = await get(`/interns/${id}/sessions?limit=2&starting_after=${first.body.next_cursor}`);
    assert.deepEqual(
      second.body.data.map((s: any) => s.id),
      ['sess-a'],
    );
    assert.equal(second.body.has_more, false);
    assert.deepEqual(Object.keys(first.body.data[0]).sort(), [
      'created_at',
      'entries',
      'id',
      'intern_id',
      'state',
      'title',
      'updated_at',
    ]);

    // A transcript's pages: the latest entries first, then the ones before them.
    const last2 = await get(`/interns/${id}/sessions/sess-a?limit=2`);
    assert.deepEqual(
      last2.body.data.map((e: any) => e.seq),
      [6, 7],
    );
    assert.equal(last2.body.has_more, true);
    assert.equal(last2.body.next_cursor, 6);
    const before = await get(`/interns/${id}/sessions/sess-a?limit=100&before=6`);
    assert.deepEqual(
      before.body.data.map((e: any) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(before.body.has_more, false);

    // A request refused with a status (a prompt over the limit) is not a turn and is not kept.
    const refused = await f.chat(id, user('x'.repeat(32_001), { session_id: 'sess-refused' }));
    assert.equal(refused.status, 400);
    assert.deepEqual((await get(`/interns/${id}/sessions/sess-refused`)).body, {
      error: { code: 404, message: 'resource not found: session', metadata: { reason: 'not_found', retryable: false } },
    });

    for (const [query, message] of <[string, string][]>[
      ['?limit=101', 'limit'],
      ['?limit=0', 'limit'],
      ['?starting_after=bm90IGEgY3Vyc29y', 'starting_after: not a cursor returned by this API'],
      ['?colour=blue', 'colour'],
    ]) {
      const r = await get(`/interns/${id}/sessions${query}`);
      assert.equal(r.status, 400, query);
      assert.match(r.body.error.message, new RegExp(message), query);
    }
    const badPage = await get(`/interns/${id}/sessions/sess-a?limit=501`);
    assert.equal(badPage.status, 400);
    assert.match(badPage.body.error.message, /limit/);
  });

  test('hostile keys: another account, another workspace, a key outside the programme see nothing', async () => {
    const notFound = (what: string) => ({
      error: { code: 404, message: `resource not found: ${what}`, metadata: { reason: 'not_found', retryable: false } },
    });
    for (const key of [stranger.apiKey, stranger.managementKey, neighbour.apiKey, neighbour.managementKey]) {
      const list = await get(`/interns/${id}/sessions`, key);
      assert.equal(list.status, 404);
      assert.deepEqual(list.body, notFound('intern'));
      const one = await get(`/interns/${id}/sessions/sess-a`, key);
      assert.equal(one.status, 404);
      assert.deepEqual(one.body, notFound('intern'));
    }
    // A key whose account is outside the interns programme may not chat with any intern.
    const outside = await get(`/interns/${id}/sessions`, outsider.apiKey);
    assert.equal(outside.status, 404);
    assert.equal(outside.body.error.metadata, undefined);
    // The stranger's own intern id space: an unknown session of a known intern is a 404 too.
    assert.deepEqual((await get(`/interns/${id}/sessions/${'z'.repeat(256)}`)).body, notFound('session'));
    const tooLong = await get(`/interns/${id}/sessions/${'z'.repeat(257)}`);
    assert.equal(tooLong.status, 400);
    assert.equal((await get('/interns/not-a-uuid/sessions')).status, 404);
  });

  test('bounds: a huge answer is kept to its head and a transcript page to its limit', async () => {
    // 40,000 characters of answer: the entry keeps 32,000 and says it was cut.
    const r = await f.chat(id, user('/repeat 4000 123456789', { session_id: 'sess-big' }));
    assert.equal(r.status, 200);
    const big = await transcript('sess-big', 3);
    const answer = big.body.data[1];
    assert.equal(answer.type, 'assistant');
    assert.equal(answer.content.length, 32_000);
    assert.equal(answer.truncated, true);
    assert.ok(answer.content.startsWith('123456789 123456789'));
  });

  test('a stopped intern’s sessions stay readable, without starting it', async () => {
    const res = await f.gw.call('POST', `/interns/${id}/suspend`);
    assert.equal(res.status, 200);
    const list = await get(`/interns/${id}/sessions`);
    assert.equal(list.status, 200);
    assert.ok(list.body.data.length >= 4);
    const one = await get(`/interns/${id}/sessions/sess-a`);
    assert.equal(one.status, 200);
    assert.equal((await f.gw.call('GET', `/interns/${id}`)).body.status, 'stopped');
  });
});
