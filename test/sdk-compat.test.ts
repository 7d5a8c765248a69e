// Compatibility: the official @openrouter/sdk client drives the management API and reads the
// results through its own typed models (it validates every response against its schemas).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import { startTestGateway, storeMatrix, type TestGateway } from './helpers/gateway.ts';
import { hashKey } from '../src/gateway/crypto/keys.ts';

for (const store of storeMatrix) {
  describe(`@openrouter/sdk against the management API (${store.name})`, () => {
    let gw: TestGateway;
    let sdk: OpenRouter;
    before(async () => {
      gw = await startTestGateway({ postgres: store.postgres });
      sdk = new OpenRouter({ apiKey: gw.keys.management_key, serverURL: gw.url });
    });
    after(() => gw.close());

    test('create and update a workspace', async () => {
      const created = await sdk.workspaces.create({
        createWorkspaceRequest: {
          name: 'Production',
          slug: 'production',
          description: 'Live traffic',
          defaultTextModel: 'openai/gpt-4o',
          defaultProviderSort: 'latency',
          // Documented difference: our server-tool namespace is `service:`; the SDK types `openrouter:` values
          // (its enum is open at run time, so only the static type needs the cast).
          disabledServerTools: ['service:web_search' as never],
          ioLoggingSamplingRate: 0.25,
        },
      });
      const ws = created.data;
      assert.equal(ws.slug, 'production');
      assert.equal(ws.defaultProviderSort, 'latency');
      assert.deepEqual(ws.disabledServerTools, ['service:web_search']);
      assert.equal(ws.ioLoggingSamplingRate, 0.25);
      assert.equal(ws.updatedAt, null);
      assert.equal(ws.createdBy, gw.keys.user_id);
      assert.match(ws.defaultGuardrailId, /^[0-9a-f-]{36}$/);
      // Documented difference: io_logging_api_key_ids holds strings (the SDK types numbers), so it is left null here.
      assert.equal(ws.ioLoggingApiKeyIds, null);

      const updated = await sdk.workspaces.update({
        id: 'production',
        updateWorkspaceRequest: { name: 'Production EU', disabledServerTools: [] },
      });
      assert.equal(updated.data.id, ws.id);
      assert.equal(updated.data.name, 'Production EU');
      assert.equal(updated.data.disabledServerTools, null);
      assert.ok(updated.data.updatedAt);
    });

    test('create a preset from a messages body, then read it and its versions', async () => {
      const res = await sdk.presets.createPresetsMessages({
        slug: 'summarizer',
        messagesRequest: {
          model: 'anthropic/claude-sonnet-4',
          maxTokens: 1024,
          system: 'Summarize in three bullet points.',
          messages: [{ role: 'user', content: 'ignored' }],
          temperature: 0.2,
          fallbacks: [{ model: 'openai/gpt-4o' }],
          provider: { allowFallbacks: false },
          sessionId: 'session-1',
          user: 'end-user-7',
        },
      });
      const p = res.data;
      assert.equal(p.slug, 'summarizer');
      assert.equal(p.status, 'active');
      assert.equal(p.workspaceId, gw.keys.workspace_id);
      assert.equal(p.designatedVersion?.version, 1);
      assert.equal(p.designatedVersion?.systemPrompt, 'Summarize in three bullet points.');
      assert.deepEqual(p.designatedVersion?.config, {
        model: 'anthropic/claude-sonnet-4',
        max_tokens: 1024,
        temperature: 0.2,
        fallbacks: [{ model: 'openai/gpt-4o' }],
        provider: { allow_fallbacks: false },
        session_id: 'session-1',
        user: 'end-user-7',
      });

      const got = await sdk.presets.get({ slug: 'summarizer' });
      assert.equal(got.data.designatedVersionId, p.designatedVersionId);
      const version = await sdk.presets.getVersion({ slug: 'summarizer', version: '1' });
      assert.equal(version.data?.presetId, p.id);
      const page = await sdk.presets.listVersions({ slug: 'summarizer' });
      assert.equal(page.result.totalCount, 1);
      const list = await sdk.presets.list();
      assert.deepEqual(
        list.result.data.map((x) => x.slug),
        ['summarizer'],
      );
    });

    test('create a provider credential, then list, get, update and delete it', async () => {
      const raw = 'sk-ant-api03-0123456789abcdefghijklmnop';
      const created = await sdk.byok.create({
        createBYOKKeyRequest: {
          key: raw,
          provider: 'anthropic',
          name: 'team key',
          allowedApiKeyHashes: [hashKey(gw.keys.api_key)],
          isFallback: true,
        },
      });
      const c = created.data;
      assert.equal(c.provider, 'anthropic');
      assert.equal(c.name, 'team key');
      assert.equal(c.label, 'sk-ant...mnop');
      assert.equal(c.isFallback, true);
      assert.equal(c.isByokOnly, false);
      assert.equal(c.declaredZdr, null);
      assert.equal(c.sortOrder, 0);
      assert.equal(c.workspaceId, gw.keys.workspace_id);
      assert.ok(!JSON.stringify(created).includes(raw));

      assert.equal((await sdk.byok.get({ id: c.id })).data.id, c.id);
      const page = await sdk.byok.list({ provider: 'anthropic' });
      assert.equal(page.result.totalCount, 1);
      const updated = await sdk.byok.update({
        id: c.id,
        updateBYOKKeyRequest: { disabled: true, allowedModels: ['anthropic/claude-sonnet-4'] },
      });
      assert.equal(updated.data.disabled, true);
      assert.deepEqual(updated.data.allowedModels, ['anthropic/claude-sonnet-4']);
      assert.deepEqual(await sdk.byok.delete({ id: c.id }), { deleted: true });
    });

    // Its ChatResult requires system_fingerprint (null allowed): without it every non-streaming send failed validation.
    test('a model request through chat.send, without and with streaming', async () => {
      const client = new OpenRouter({ apiKey: gw.keys.api_key, serverURL: gw.url });
      const result = (await client.chat.send({
        chatRequest: {
          model: 'local/scripted',
          stream: false,
          messages: [{ role: 'user', content: '/say hello there' }],
        },
      })) as ChatResult;
      assert.equal(result.object, 'chat.completion');
      assert.equal(result.systemFingerprint, null);
      assert.equal(result.choices[0]?.message.content, 'hello there');
      assert.equal(result.choices[0]?.finishReason, 'stop');
      assert.equal(
        result.usage?.totalTokens,
        (result.usage?.promptTokens ?? 0) + (result.usage?.completionTokens ?? 0),
      );

      const stream = (await client.chat.send({
        chatRequest: {
          model: 'local/scripted',
          stream: true,
          messages: [{ role: 'user', content: '/say hello there' }],
        },
      })) as AsyncIterable<ChatStreamChunk>;
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'hello there');
    });

    test('refusals surface as the SDK typed errors', async () => {
      const ordinary = new OpenRouter({ apiKey: gw.keys.api_key, serverURL: gw.url });
      await assert.rejects(
        ordinary.workspaces.create({ createWorkspaceRequest: { name: 'x', slug: 'x' } }),
        (e: { statusCode?: number; message?: string }) => {
          assert.equal(e.statusCode, 403);
          return true;
        },
      );
      await assert.rejects(
        sdk.byok.create({ createBYOKKeyRequest: { key: 'k', provider: 'openai', isByokOnly: true, isFallback: true } }),
        (e: { statusCode?: number }) => e.statusCode === 400,
      );
    });
  });
}
