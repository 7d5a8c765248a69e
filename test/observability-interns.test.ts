// Broadcast of intern turns (docs/guides/observability.md): a real intern (daemon, built-in agent,
// scripted model) chatted with, its turn exported as an `invoke_agent` span to an OTLP/HTTP
// collector on loopback; a workspace without broadcast exports none.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';
import { user } from './helpers/chat.ts';

type Attr = { key: string; value: { stringValue?: string; intValue?: string | number } };
type Span = { traceId: string; name: string; attributes: Attr[] };

describe('broadcast: intern turns', () => {
  let f: InternFixture;
  let server: Server;
  const bodies: string[] = [];
  const spans = () =>
    bodies.flatMap((b) =>
      (JSON.parse(b).resourceSpans as { scopeSpans: { spans: Span[] }[] }[]).flatMap((r) =>
        r.scopeSpans.flatMap((s) => s.spans),
      ),
    );
  const attr = (s: Span, k: string) => {
    const v = s.attributes.find((a) => a.key === k)?.value;
    return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
  };

  before(async () => {
    server = createServer((req, res) => {
      let b = '';
      req.on('data', (c: Buffer) => (b += c));
      req.on('end', () => {
        bodies.push(b);
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    f = await startInternFixture({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        // Longer than the test: turning broadcast on must apply at once, not when the cache ages out.
        COHORT_ROUTING_CACHE_MS: '600000',
      },
    });
  });
  after(async () => {
    await f.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  test('a turn is an invoke_agent span with the intern, session, usage and status; none while broadcast is off', async () => {
    const id = await f.intern('observed');
    const quiet = await f.chat(id, user('/say nobody listens'));
    assert.equal(quiet.status, 200);
    await f.gw.ctx.broadcast.flush();
    assert.equal(spans().length, 0);

    const on = await f.gw.call('PATCH', `/workspaces/${f.gw.keys.workspace_id}`, {
      body: { is_observability_broadcast_enabled: true },
    });
    assert.equal(on.status, 200);
    const r = await f.chat(id, user('/say hello world'));
    assert.equal(r.status, 200);
    const final = r.chunks.at(-1);
    await f.gw.ctx.broadcast.flush();
    const turns = spans().filter((s) => attr(s, 'gen_ai.operation.name') === 'invoke_agent');
    assert.equal(turns.length, 1);
    const [s] = turns;
    assert.equal(s!.name, 'invoke_agent observed');
    assert.equal(attr(s!, 'gen_ai.agent.id'), id);
    assert.equal(attr(s!, 'session.id'), final.session_id);
    assert.equal(attr(s!, 'gen_ai.response.id'), final.id);
    assert.equal(attr(s!, 'cohort.status'), 200);
    assert.equal(attr(s!, 'gen_ai.usage.input_tokens'), final.usage.prompt_tokens);
    assert.doesNotMatch(bodies.join(''), new RegExp(f.gw.keys.api_key));
  });
});
