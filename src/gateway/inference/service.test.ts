import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, storeMatrix, type TestGateway } from '../../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../test/helpers/fake-upstream.ts';
import { createKey } from '../access/identity-store.ts';
import { hashKey } from '../crypto/keys.ts';
import { SHARED_OPENAI_KEY, space, upstreamEnv, user, type Space } from '../../../test/helpers/inference-fixtures.ts';

for (const store of storeMatrix) {
  describe(`inference routing by credentials (${store.name})`, () => {
    let gw: TestGateway;
    let up: FakeUpstream;
    before(async () => {
      up = await startFakeUpstream();
      gw = await startTestGateway({ postgres: store.postgres, env: upstreamEnv(up) });
    });
    after(async () => {
      await gw.close();
      await up.close();
    });
    /** The keys the upstream saw for the requests made during fn. */
    async function keysSeen(fn: () => Promise<unknown>): Promise<(string | null)[]> {
      const from = up.received.length;
      await fn();
      return up.received.slice(from).map((r) => r.key);
    }
    const ask = (s: Space, extra: Record<string, unknown> = {}) =>
      s.chat({ model: 'openai/gpt-4o', messages: [user('/say hi')], ...extra });

    test('sort_order, fallback credentials and shared capacity are tried in order on retryable failures', async () => {
      const s = await space(gw, 'order');
      await s.credential({ key: 'sk-order-a', sort_order: 2 });
      await s.credential({ key: 'sk-order-b', sort_order: 1 });
      await s.credential({ key: 'sk-order-f', is_fallback: true });
      for (const k of ['sk-order-a', 'sk-order-b', SHARED_OPENAI_KEY]) up.failKey(k, 503);
      let res: { status: number; body: any } | undefined;
      const seen = await keysSeen(async () => (res = await ask(s)));
      assert.deepEqual(seen, ['sk-order-b', 'sk-order-a', SHARED_OPENAI_KEY, 'sk-order-f']);
      assert.equal(res!.status, 200);
      assert.equal(res!.body.usage.is_byok, true);
      for (const k of ['sk-order-a', 'sk-order-b', SHARED_OPENAI_KEY]) up.failKey(k, 0);
      const [row] = await s.log();
      assert.equal(row!.attempts, 4);
      assert.equal(row!.isByok, true);
      assert.equal(row!.provider, 'openai');
    });

    test('the first working credential serves; disabled ones are skipped', async () => {
      const s = await space(gw, 'disabled');
      const off = await s.credential({ key: 'sk-disabled-x', disabled: true });
      const on = await s.credential({ key: 'sk-enabled-y' });
      assert.deepEqual(await keysSeen(() => ask(s)), ['sk-enabled-y']);
      const [row] = await s.log();
      assert.equal(row!.credentialId, on.id);
      assert.notEqual(row!.credentialId, off.id);
      assert.equal(up.received.at(-1)!.model, 'gpt-4o');
    });

    test('allowed_models, allowed_user_ids and allowed_api_key_hashes restrict who and what', async () => {
      const s = await space(gw, 'restrict');
      await s.credential({ key: 'sk-models-only-mini', allowed_models: ['openai/gpt-4o-mini'] });
      await s.credential({ key: 'sk-users-other', allowed_user_ids: ['someone-else'] });
      await s.credential({ key: 'sk-users-mine', allowed_user_ids: [gw.keys.user_id], sort_order: 5 });
      await s.credential({ key: 'sk-hash-mine', allowed_api_key_hashes: [hashKey(s.key)], sort_order: 6 });
      up.failKey('sk-users-mine', 429);
      assert.deepEqual(await keysSeen(() => ask(s)), ['sk-users-mine', 'sk-hash-mine']);
      assert.deepEqual(await keysSeen(() => ask(s, { model: 'openai/gpt-4o-mini' })), ['sk-models-only-mini']);
      const other = await createKey(gw.ctx.store.db, {
        orgId: gw.keys.org_id,
        creatorUserId: gw.keys.user_id,
        kind: 'standard',
        workspaceId: s.ws.id,
      });
      up.failKey('sk-users-mine', 0);
      assert.deepEqual(await keysSeen(() => s.chat({ model: 'openai/gpt-4o', messages: [user('hi')] }, other.raw)), [
        'sk-users-mine',
      ]);
    });

    test('is_byok_only skips shared capacity for the whole provider, with a clear error when nothing is left', async () => {
      const s = await space(gw, 'byok-only');
      await s.credential({ key: 'sk-byok-only', is_byok_only: true, allowed_models: ['openai/gpt-4o'] });
      up.failKey('sk-byok-only', 500);
      let res: { status: number; body: any } | undefined;
      assert.deepEqual(await keysSeen(async () => (res = await ask(s))), ['sk-byok-only']);
      assert.equal(res!.status, 502);
      assert.deepEqual(res!.body.error.metadata, { reason: 'turn_failed', retryable: true });
      const none = await ask(s, { model: 'openai/o3' });
      assert.equal(none.status, 400);
      assert.match(none.body.error.message, /provider openai is BYOK-only/);
    });

    test('is_required removes shared capacity only for its models', async () => {
      const s = await space(gw, 'required');
      await s.credential({ key: 'sk-required', is_required: true, allowed_models: ['openai/gpt-4o'] });
      up.failKey('sk-required', 503);
      assert.deepEqual(await keysSeen(() => ask(s)), ['sk-required']);
      assert.deepEqual(await keysSeen(() => ask(s, { model: 'openai/o3' })), [SHARED_OPENAI_KEY]);
    });

    test('a request requiring ZDR uses only credentials that declare it', async () => {
      const s = await space(gw, 'zdr');
      await s.credential({ key: 'sk-zdr-no', declared_zdr: false });
      await s.credential({ key: 'sk-zdr-unknown' });
      await s.credential({ key: 'sk-zdr-yes', declared_zdr: true, sort_order: 9 });
      assert.deepEqual(await keysSeen(() => ask(s, { provider: { zdr: true } })), ['sk-zdr-yes']);
      assert.deepEqual(await keysSeen(() => ask(s)), ['sk-zdr-no']);
      const t = await space(gw, 'zdr-none');
      const refused = await ask(t, { provider: { zdr: true } });
      assert.equal(refused.status, 400);
      assert.match(refused.body.error.message, /zero data retention/);
    });

    test('non-retryable failures are returned at once with the provider message, the key scrubbed', async () => {
      const s = await space(gw, 'fatal');
      await s.credential({ key: 'sk-fatal-first-key' });
      await s.credential({ key: 'sk-fatal-second-key' });
      up.failKey('sk-fatal-first-key', 401);
      let res: { status: number; body: any } | undefined;
      assert.deepEqual(await keysSeen(async () => (res = await ask(s))), ['sk-fatal-first-key']);
      assert.equal(res!.status, 401);
      assert.equal(res!.body.error.message, 'provider openai: upstream refused key [REDACTED] with 401');
      assert.deepEqual(res!.body.error.metadata, { reason: 'turn_failed', retryable: false });
      up.failKey('sk-fatal-first-key', 400);
      const bad = await ask(s);
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.body.error.metadata, { reason: 'bad_request', retryable: false });
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => r.status),
        [401, 400],
      );
      assert.ok(!JSON.stringify(rows).includes('sk-fatal'));
    });

    test('a provider status that is neither 200 nor a mapped error is a 502 naming it, not our status', async () => {
      const s = await space(gw, 'odd-status');
      await s.credential({ key: 'sk-odd-status-key' });
      const cases: [number, string][] = [
        [204, 'provider openai: unexpected status 204'],
        [301, 'provider openai: its base URL redirects (301); redirects are not followed'],
        [418, 'provider openai: unexpected status 418: upstream refused key [REDACTED] with 418'],
      ];
      for (const [status, message] of cases) {
        up.failKey('sk-odd-status-key', status);
        for (const stream of [false, true]) {
          const res = await ask(s, { stream });
          assert.equal(res.status, 502, `${status}`);
          assert.equal(res.headers.get('location'), null);
          assert.deepEqual(res.body, {
            error: { code: 502, message, metadata: { reason: 'turn_failed', retryable: false } },
          });
        }
      }
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => [r.status, r.attempts, r.error]),
        cases.flatMap(([, message]) => [
          [502, 1, message],
          [502, 1, message],
        ]),
      );
    });

    test('all attempts failing with 429 is a retryable 429; a provider with no credential names why', async () => {
      const s = await space(gw, 'exhausted');
      await s.credential({ key: 'sk-limited', is_byok_only: true });
      up.failKey('sk-limited', 429);
      const res = await ask(s);
      assert.equal(res.status, 429);
      assert.deepEqual(res.body.error.metadata, { reason: 'rate_limited', retryable: true });
      assert.equal(res.headers.get('retry-after'), '1');
      const groq = await ask(s, { model: 'groq/llama-3.1-8b' });
      assert.equal(groq.status, 400);
      assert.match(groq.body.error.message, /^no credential for provider groq/);
      const restricted = await space(gw, 'restricted-groq');
      await restricted.credential({ provider: 'groq', key: 'gsk-other-user', allowed_user_ids: ['nobody'] });
      const r2 = await ask(restricted, { model: 'groq/llama-3.1-8b' });
      assert.match(r2.body.error.message, /restricted from this request/);
    });

    test('garbage, hang-ups and unreachable endpoints are retryable before output; after it the stream ends with an error chunk', async () => {
      const s = await space(gw, 'misbehave');
      await s.credential({ key: 'sk-garbage-key-1', sort_order: 1 });
      await s.credential({ key: 'sk-hangup-key-22', sort_order: 2 });
      await s.credential({ key: 'sk-healthy-key-3', sort_order: 3 });
      up.misbehave('sk-garbage-key-1', 'malformed');
      up.misbehave('sk-hangup-key-22', 'hangup');
      let res: Awaited<ReturnType<typeof ask>> | undefined;
      assert.deepEqual(await keysSeen(async () => (res = await ask(s))), [
        'sk-garbage-key-1',
        'sk-hangup-key-22',
        'sk-healthy-key-3',
      ]);
      assert.equal(res!.status, 200);
      assert.equal(res!.body.choices[0].message.content, 'hi');
      up.misbehave('sk-garbage-key-1', 'broken-stream');
      for (const how of ['broken-stream', 'malformed', 'truncated'] as const) {
        up.misbehave('sk-garbage-key-1', how);
        const streamed = await ask(s, { stream: true });
        assert.equal(streamed.status, 200);
        const frames = (streamed.body as string).split('\n\n').filter(Boolean);
        assert.equal(frames.at(-1), 'data: [DONE]');
        const last = JSON.parse(frames.at(-2)!.slice(6));
        assert.equal(last.choices[0].finish_reason, 'error');
        assert.equal(last.error.code, 502);
        assert.ok(!JSON.stringify(last).includes('sk-garbage'));
      }
      up.misbehave('sk-garbage-key-1', null);
      up.misbehave('sk-hangup-key-22', null);
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => [r.status, r.attempts]),
        [
          [200, 3],
          [502, 1],
          [502, 1],
          [502, 1],
        ],
      );
    });

    test('an endpoint nobody listens on is a retryable 502 naming the provider', async () => {
      const closed = await startFakeUpstream();
      await closed.close();
      const other = await startTestGateway({
        env: {
          COHORT_ROUTING_CACHE_MS: '1',
          COHORT_PROVIDER_GROQ_BASE_URL: closed.url,
          COHORT_PROVIDER_GROQ_API_KEY: 'gsk-shared-unreachable',
        },
      });
      try {
        const res = await other.call('POST', '/chat/completions', {
          key: other.keys.api_key,
          body: { model: 'groq/llama', messages: [user('hi')] },
        });
        assert.equal(res.status, 502);
        assert.match(res.body.error.message, /^provider groq: could not reach the provider \(ECONNREFUSED\)$/);
        assert.deepEqual(res.body.error.metadata, { reason: 'turn_failed', retryable: true });
      } finally {
        await other.close();
      }
    });

    test('fallback models are tried when every route of a model failed retryably', async () => {
      const s = await space(gw, 'fallbacks');
      await s.credential({ provider: 'groq', key: 'gsk-fallback-groq' });
      const seen: string[] = [];
      const from = up.received.length;
      const res = await s.chat({
        model: 'local/scripted',
        fallbacks: [{ model: 'groq/llama-3.1-8b' }],
        messages: [user('/fail 503')],
      });
      // The scripted model fails 503; so does the fake upstream playing the same script, so every model is tried.
      for (const r of up.received.slice(from)) seen.push(`${r.key} ${r.model}`);
      assert.equal(res.status, 502);
      assert.deepEqual(seen, ['gsk-fallback-groq llama-3.1-8b']);
      const ok = await s.chat({ model: 'local/scripted', models: ['openai/gpt-4o'], messages: [user('/fail 429')] });
      assert.equal(ok.status, 429);
      const rows = await s.log();
      assert.deepEqual(
        rows.map((r) => [r.status, r.attempts]),
        [
          [502, 2],
          [429, 2],
        ],
      );
    });
  });
}
