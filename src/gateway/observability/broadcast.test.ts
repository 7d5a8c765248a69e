import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { lookup } from 'node:dns/promises';
import { internalAddress } from '../../shared/egress-policy.ts';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { createTestAccount, type TestAccount } from '../../../test/helpers/accounts.ts';

type Export = { path: string; headers: IncomingHttpHeaders; body: Buffer };
type Value = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: Value[] };
};
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Value }[];
  status?: { code?: number; message?: string };
};

/** An OTLP/HTTP collector on loopback: keeps each export as it arrived. */
async function startCollector(status = 200) {
  const exports: Export[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    exports,
    /** Every span of every JSON export, its attributes as a plain object. */
    spans(): (OtlpSpan & { attrs: Record<string, unknown> })[] {
      return exports.flatMap((e) =>
        (JSON.parse(e.body.toString()).resourceSpans as { scopeSpans: { spans: OtlpSpan[] }[] }[]).flatMap((r) =>
          r.scopeSpans.flatMap((s) =>
            s.spans.map((sp) => ({
              ...sp,
              attrs: Object.fromEntries(sp.attributes.map((a) => [a.key, otlpValue(a.value)])),
            })),
          ),
        ),
      );
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const otlpValue = (v: Value): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.doubleValue ??
  v.boolValue ??
  v.arrayValue?.values.map(otlpValue);

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('broadcast: spans to OTLP/HTTP collectors', () => {
  let gw: TestGateway;
  let other: TestAccount;
  let installation: Awaited<ReturnType<typeof startCollector>>;
  let workspace: Awaited<ReturnType<typeof startCollector>>;
  let refusing: Awaited<ReturnType<typeof startCollector>>;
  let deadPort: number;
  const chat = (key: string, body: Record<string, unknown>) =>
    gw.call('POST', '/chat/completions', {
      key,
      body: { model: 'local/scripted', messages: [{ role: 'user', content: '/say hello there' }], ...body },
    });
  const settle = async () => {
    await gw.ctx.inference.flush();
    await gw.ctx.broadcast.flush();
  };

  before(async () => {
    installation = await startCollector();
    workspace = await startCollector();
    refusing = await startCollector(503);
    const dead = await startCollector();
    deadPort = dead.port;
    await dead.close();
    gw = await startTestGateway({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${installation.port}/otel`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-installation-secret=inst-secret-123',
        COHORT_BROADCAST_EGRESS: [workspace.port, refusing.port, deadPort].map((p) => `127.0.0.1:${p}`).join(','),
      },
    });
    other = await createTestAccount(gw.ctx.store.db, { name: 'Other' });
    const on = await gw.call('PATCH', `/workspaces/${gw.keys.workspace_id}`, {
      body: { is_observability_broadcast_enabled: true },
    });
    assert.equal(on.status, 200);
  });
  after(async () => {
    await gw.close();
    await installation.close();
    await workspace.close();
    await refusing.close();
  });

  test('a workspace destination: created with sealed headers shown masked; bad ones refused, naming the field', async () => {
    const created = await gw.call('POST', '/observability/destinations', {
      body: {
        name: 'tempo',
        endpoint: `http://127.0.0.1:${workspace.port}/v1/traces`,
        protocol: 'http/protobuf',
        headers: { authorization: 'Bearer ws-collector-secret-456' },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      { ...created.body.data, id: undefined, created_at: undefined },
      {
        id: undefined,
        created_at: undefined,
        name: 'tempo',
        workspace_id: gw.keys.workspace_id,
        kind: 'otlp',
        endpoint: `http://127.0.0.1:${workspace.port}/v1/traces`,
        protocol: 'http/protobuf',
        headers: { authorization: 'Bearer...-456' },
        disabled: false,
      },
    );
    const listed = await gw.call('GET', '/observability/destinations');
    assert.equal(listed.body.data.length, 1);
    assert.doesNotMatch(JSON.stringify(listed.body), /ws-collector-secret/);
    const [stored] = (
      (await gw.ctx.store.db.execute('select headers_sealed from broadcast_destinations')) as unknown as {
        rows: { headers_sealed: string }[];
      }
    ).rows;
    assert.match(stored!.headers_sealed, /^v1:/);
    assert.doesNotMatch(stored!.headers_sealed, /ws-collector-secret/);

    for (const [body, message] of [
      [
        { endpoint: 'http://127.0.0.1:9/v1/traces' },
        /^invalid request parameters: endpoint: names an internal address/,
      ],
      [{ endpoint: 'http://localhost/v1/traces' }, /^invalid request parameters: endpoint: names an internal address/],
      [
        { endpoint: 'ftp://collector.example/v1' },
        /^invalid request parameters: endpoint: must be an http or https URL/,
      ],
      [
        { endpoint: 'https://u:p@collector.example/v1' },
        /^invalid request parameters: endpoint: must not hold credentials/,
      ],
      [
        { endpoint: 'https://collector.example/v1', kind: 'webhook' },
        /^invalid request parameters: kind: webhook destinations are not built yet/,
      ],
      [{ endpoint: 'https://collector.example/v1', protocol: 'grpc' }, /^invalid request parameters: protocol/],
      [
        { endpoint: 'https://collector.example/v1', headers: { host: 'x' } },
        /^invalid request parameters: headers\.host/,
      ],
      [
        { endpoint: 'https://collector.example/v1', workspace_id: other.workspaceId },
        /^invalid request parameters: workspace_id: no such workspace/,
      ],
    ] as const) {
      const res = await gw.call('POST', '/observability/destinations', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error.message, message);
    }
    const standard = await gw.call('POST', '/observability/destinations', {
      key: gw.keys.api_key,
      body: { endpoint: 'https://collector.example/v1' },
    });
    assert.equal(standard.status, 403);
    // Another account sees none of it and cannot delete it.
    assert.deepEqual((await gw.call('GET', '/observability/destinations', { key: other.managementKey })).body, {
      data: [],
    });
    const id = created.body.data.id;
    assert.equal((await gw.call('GET', `/observability/destinations/${id}`, { key: other.managementKey })).status, 404);
    assert.equal(
      (await gw.call('DELETE', `/observability/destinations/${id}`, { key: other.managementKey })).status,
      404,
    );
  });

  test('a model request is a GenAI span in the caller trace, named and attributed from its metadata', async () => {
    const res = await chat(gw.keys.api_key, {
      session_id: 'sess-42',
      user: 'end-user-7',
      metadata: {
        trace_id: TRACE,
        parent_span_id: PARENT,
        generation_name: 'summarise',
        trace_name: 'nightly',
        team: 'blue',
      },
    });
    assert.equal(res.status, 200);
    await settle();
    const spans = installation.spans().filter((s) => s.attrs['gen_ai.response.id'] === res.body.id);
    assert.equal(spans.length, 1);
    const [s] = spans;
    assert.deepEqual([s!.traceId, s!.parentSpanId, s!.name], [TRACE, PARENT, 'summarise']);
    assert.equal(installation.exports[0]!.path, '/otel/v1/traces');
    assert.equal(installation.exports[0]!.headers['content-type'], 'application/json');
    assert.equal(installation.exports[0]!.headers['x-installation-secret'], 'inst-secret-123');
    const a = s!.attrs;
    assert.deepEqual(
      [
        a['gen_ai.operation.name'],
        a['gen_ai.provider.name'],
        a['gen_ai.response.model'],
        a['gen_ai.response.finish_reasons'],
        a['gen_ai.usage.input_tokens'],
        a['gen_ai.usage.output_tokens'],
        a['cohort.cost_usd'],
        a['cohort.endpoint'],
        a['cohort.status'],
        a['session.id'],
        a['user.id'],
        a['metadata.team'],
        a['cohort.trace_name'],
      ],
      [
        'chat',
        'local',
        'local/scripted',
        ['stop'],
        res.body.usage.prompt_tokens,
        res.body.usage.completion_tokens,
        res.body.usage.cost,
        'local:local/scripted',
        200,
        'sess-42',
        'end-user-7',
        'blue',
        'nightly',
      ],
    );
    // The asked model is not repeated when it is the one that served; the duration is the latency.
    assert.equal(a['gen_ai.request.model'], undefined);
    assert.ok(BigInt(s!.endTimeUnixNano) >= BigInt(s!.startTimeUnixNano));
    // The known keys are not repeated as attributes.
    assert.equal(a['metadata.trace_id'], undefined);

    // The workspace's destination: protobuf, its own header only (never the installation's).
    const ws = workspace.exports;
    assert.ok(ws.length >= 1);
    assert.equal(ws[0]!.headers['content-type'], 'application/x-protobuf');
    assert.equal(ws[0]!.headers.authorization, 'Bearer ws-collector-secret-456');
    assert.equal(ws[0]!.headers['x-installation-secret'], undefined);
    const pb = Buffer.concat(ws.map((e) => e.body));
    assert.ok(pb.includes(Buffer.from('summarise')) && pb.includes(Buffer.from(TRACE, 'hex')));
    assert.ok(pb.includes(Buffer.from('metadata.team')));

    // No key, key id or secret in anything any collector received.
    const everything = Buffer.concat([...installation.exports, ...ws].map((e) => e.body)).toString('latin1');
    for (const secret of [
      gw.keys.api_key,
      gw.keys.management_key,
      'ws-collector-secret-456',
      'inst-secret-123',
      gw.keys.api_key.slice(-12),
    ])
      assert.ok(!everything.includes(secret), `a collector received ${secret.slice(0, 6)}…`);
  });

  test('without metadata: a root span whose trace is the generation; a failure is an error span', async () => {
    const ok = await chat(gw.keys.api_key, {});
    const bad = await gw.call('POST', '/chat/completions', {
      key: gw.keys.api_key,
      body: { model: 'local/nope', messages: [{ role: 'user', content: 'x' }] },
    });
    assert.equal(bad.status, 404);
    await settle();
    const [s] = installation.spans().filter((x) => x.attrs['gen_ai.response.id'] === ok.body.id);
    assert.equal(s!.parentSpanId ?? '', '');
    assert.equal(s!.traceId, ok.body.id.replace(/^gen-/, '').replaceAll('-', ''));
    assert.equal(s!.name, 'chat local/scripted');
  });

  test('a server-tool loop: a span per model turn and per tool run, all in the generation trace', async () => {
    const res = await chat(gw.keys.api_key, {
      tools: [{ type: 'service:datetime' }],
      messages: [{ role: 'user', content: '/tool datetime {}' }],
      metadata: { span_name: 'clock' },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await settle();
    const mine = installation.spans().filter((s) => s.attrs['gen_ai.response.id'] === res.body.id);
    const tools = mine.filter((s) => s.attrs['gen_ai.operation.name'] === 'execute_tool');
    const turns = mine.filter((s) => s.attrs['gen_ai.operation.name'] === 'chat');
    assert.equal(tools.length, 1);
    assert.equal(turns.length, 2);
    assert.deepEqual([tools[0]!.name, tools[0]!.attrs['gen_ai.tool.name']], ['clock', 'service:datetime']);
    assert.deepEqual(turns.map((t) => t.attrs['cohort.step']).sort(), [1, 2]);
    assert.equal(new Set(mine.map((s) => s.traceId)).size, 1);
  });

  test('a workspace without broadcast sends nothing', async () => {
    const before = installation.exports.length + workspace.exports.length;
    assert.equal((await chat(other.apiKey, {})).status, 200);
    await settle();
    assert.equal(installation.exports.length + workspace.exports.length, before);
  });

  test('a dead or refusing collector fails no request, and what it drops is counted in /metrics', async () => {
    for (const port of [deadPort, refusing.port]) {
      const res = await gw.call('POST', '/observability/destinations', {
        body: { endpoint: `http://127.0.0.1:${port}/v1/traces`, protocol: 'http/json' },
      });
      assert.equal(res.status, 201);
    }
    for (let i = 0; i < 3; i++) assert.equal((await chat(gw.keys.api_key, {})).status, 200);
    await settle();
    assert.ok(refusing.exports.length >= 1);
    const metrics = await (await fetch(gw.url.replace('/api/v1', '/metrics'))).text();
    const dropped = Number(
      /cohort_broadcast_spans_total\{outcome="dropped",reason="export_failed"\} (\d+)/.exec(metrics)?.[1],
    );
    assert.ok(
      dropped >= 6,
      metrics
        .split('\n')
        .filter((l) => l.includes('broadcast'))
        .join('\n'),
    );
    assert.match(metrics, /cohort_broadcast_spans_total\{outcome="exported",reason=""\} [1-9]/);
  });

  test('a destination named by a host that resolves inside the network is never connected to', async (t) => {
    const name = hostname();
    const addrs = await lookup(name, { all: true }).catch(() => []);
    if (!addrs.some((a) => a.address === '127.0.0.1') || !addrs.every((a) => internalAddress(a.address)))
      return t.skip(`this host's name (${name}) does not resolve to loopback only`);
    const sneaky = await startCollector();
    try {
      const res = await gw.call('POST', '/observability/destinations', {
        body: { endpoint: `http://${name}:${sneaky.port}/v1/traces`, protocol: 'http/json' },
      });
      // A name is not refused when it is added: what it resolves to is checked at each connection.
      assert.equal(res.status, 201);
      assert.equal((await chat(gw.keys.api_key, {})).status, 200);
      await settle();
      assert.equal(sneaky.exports.length, 0);
    } finally {
      await sneaky.close();
    }
  });
});
