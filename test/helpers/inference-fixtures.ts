// Test fixtures for model requests: a workspace of its own per test with a key bound to it, its
// credentials and presets created through the management API, a fake upstream wired in as the
// `openai` and `anthropic` providers, the request log read back, and SSE bodies parsed.
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { createKey } from '../../src/gateway/access/identity-store.ts';
import { inferenceRequests } from '../../src/gateway/store/schema-inference.ts';
import type { TestGateway } from './gateway.ts';
import type { FakeUpstream } from './fake-upstream.ts';

export const SHARED_OPENAI_KEY = 'sk-shared-openai-0123456789';

export function upstreamEnv(up: FakeUpstream): Record<string, string> {
  return {
    COHORT_ROUTING_CACHE_MS: '1',
    COHORT_PROVIDER_OPENAI_BASE_URL: up.url,
    COHORT_PROVIDER_OPENAI_API_KEY: SHARED_OPENAI_KEY,
    COHORT_PROVIDER_GROQ_BASE_URL: up.url,
    COHORT_PROVIDER_ANTHROPIC_BASE_URL: up.url,
  };
}

export type Space = Awaited<ReturnType<typeof space>>;

export async function space(gw: TestGateway, slug: string, settings: Record<string, unknown> = {}) {
  const res = await gw.call('POST', '/workspaces', { body: { name: slug, slug, ...settings } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const ws = res.body.data as { id: string };
  const { raw, key } = await createKey(gw.ctx.store.db, {
    orgId: gw.keys.org_id,
    creatorUserId: gw.keys.user_id,
    kind: 'standard',
    workspaceId: ws.id,
  });
  return {
    ws,
    key: raw,
    keyRow: key,
    async credential(body: Record<string, unknown>): Promise<{ id: string }> {
      const r = await gw.call('POST', '/byok', { body: { workspace_id: ws.id, provider: 'openai', ...body } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.data;
    },
    async patch(body: Record<string, unknown>) {
      const r = await gw.call('PATCH', `/workspaces/${ws.id}`, { body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    },
    chat: (body: Record<string, unknown>, key = raw) => gw.call('POST', '/chat/completions', { key, body }),
    messages: (body: Record<string, unknown>, key = raw) => gw.call('POST', '/messages', { key, body }),
    responses: (body: Record<string, unknown>, key = raw) => gw.call('POST', '/responses', { key, body }),
    async log() {
      await gw.ctx.inference.flush();
      return gw.ctx.store.db
        .select()
        .from(inferenceRequests)
        .where(eq(inferenceRequests.workspaceId, ws.id))
        .orderBy(inferenceRequests.createdAt);
    },
  };
}

export const user = (content: string) => ({ role: 'user', content });

/** A /messages SSE body as [event, data] pairs; each frame's `event:` matches its data's type. */
export function anthropicFrames(text: string): [string, any][] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const m = /^event: (\S+)\ndata: (.*)$/s.exec(f);
      assert.ok(m, f);
      const data = JSON.parse(m[2]!);
      assert.equal(data.type, m[1]);
      return [m[1]!, data];
    });
}

/** A /responses SSE body as [event, data] pairs; each frame's `event:` matches its data's type and
 * the sequence numbers count from 0 without a gap. */
export function responseFrames(text: string): [string, any][] {
  const frames = anthropicFrames(text);
  assert.deepEqual(
    frames.map(([, d]) => d.sequence_number),
    frames.map((_, i) => i),
    'sequence numbers',
  );
  return frames;
}
