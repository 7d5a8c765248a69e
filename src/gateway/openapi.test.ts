import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestGateway, type TestGateway } from '../../test/helpers/gateway.ts';
import { MANAGEMENT_ROUTES } from '../../test/helpers/management-routes.ts';
import { BYOK_PROVIDERS } from './management/byok.schemas.ts';

type Operation = {
  summary: string;
  tags: string[];
  security: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: { type: string } }[];
  requestBody?: { required: boolean; content: Record<string, { schema: Record<string, any> }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
};

describe('GET /api/v1/openapi.json', () => {
  let gw: TestGateway;
  let doc: any;
  before(async () => {
    gw = await startTestGateway();
    const res = await gw.call('GET', '/openapi.json', { key: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = res.body;
  });
  after(() => gw.close());

  test('is an OpenAPI 3.1 document with info, servers, bearer security and paths', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(typeof doc.info.title, 'string');
    assert.equal(typeof doc.info.version, 'string');
    assert.deepEqual(doc.servers, [{ url: '/api/v1' }]);
    assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer' });
    for (const [path, item] of Object.entries<Record<string, Operation>>(doc.paths)) {
      assert.match(path, /^\/[^:]*$/, 'paths use {param} templates');
      for (const [method, op] of Object.entries(item).filter(([k]) => k !== 'servers')) {
        assert.ok(['get', 'post', 'patch', 'delete', 'put'].includes(method));
        assert.ok(Object.keys(op.responses).length > 0, `${method} ${path} has responses`);
        for (const [code, r] of Object.entries(op.responses)) {
          assert.match(code, /^[1-5]\d\d$/);
          assert.equal(typeof r.description, 'string');
        }
        const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
        const inPath = op.parameters.filter((p) => p.in === 'path');
        assert.deepEqual(inPath.map((p) => p.name).sort(), templated, `${method} ${path} declares its path parameters`);
        for (const p of inPath) assert.equal(p.required, true);
        for (const p of op.parameters) assert.ok(['path', 'query', 'header'].includes(p.in));
      }
    }
  });

  test('lists every management route, with a request schema where it takes a body', () => {
    for (const r of MANAGEMENT_ROUTES) {
      const op: Operation | undefined = doc.paths[r.template]?.[r.method.toLowerCase()];
      assert.ok(op, `${r.method} ${r.template} is documented`);
      assert.deepEqual(op.security, [{ bearer: [] }]);
      for (const code of r.statuses)
        assert.ok(op.responses[String(code)], `${r.method} ${r.template} documents ${code}`);
      assert.ok(op.responses['401'] && op.responses['403'], `${r.method} ${r.template} documents 401 and 403`);
      if (r.body) {
        const schema = op.requestBody?.content['application/json']?.schema;
        assert.equal(schema?.type, 'object', `${r.method} ${r.template} has a JSON request schema`);
        assert.ok(Object.keys(schema.properties).length > 0);
      } else {
        assert.equal(op.requestBody, undefined);
      }
    }
  });

  test('request schemas carry the documented bounds (generated from the validating schemas)', () => {
    const byok = doc.paths['/byok'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(byok.required.sort(), ['key', 'provider']);
    assert.equal(byok.additionalProperties, false);
    assert.deepEqual(byok.properties.provider.enum, [...BYOK_PROVIDERS]);
    const hashes = byok.properties.allowed_api_key_hashes.anyOf[0];
    assert.deepEqual([hashes.minItems, hashes.maxItems, hashes.items.pattern], [1, 100, '^[a-f0-9]{64}$']);
    const preset = doc.paths['/presets/{slug}/messages'].post.requestBody.content['application/json'].schema;
    assert.equal(preset.properties.fallbacks.anyOf[0].maxItems, 3);
    assert.equal(preset.properties.user.anyOf[0].maxLength, 256);
    assert.equal(preset.properties.session_id.anyOf[0].maxLength, 256);
    const ws = doc.paths['/workspaces'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(ws.required.sort(), ['name', 'slug']);
    assert.equal(ws.properties.slug.pattern, '^[a-z0-9]+(?:-[a-z0-9]+)*$');
  });

  test("documents every route the gateway registered, the operators' routes at the root", () => {
    assert.deepEqual(gw.ctx.docs.undocumented(), []);
    assert.deepEqual(doc.paths['/health'].servers, [{ url: '/' }]);
    assert.equal(doc.paths['/interns'].servers, undefined);
    const operations = Object.values<Record<string, unknown>>(doc.paths).flatMap((item) =>
      Object.keys(item).filter((k) => k !== 'servers'),
    );
    // 36 API and operators' operations, and the console's assets where the console is built.
    assert.ok(operations.length >= 36, String(operations.length));
  });

  test('documents the query parameters and headers routes validate', () => {
    const params = (path: string, method: string, where: string) =>
      doc.paths[path][method].parameters.filter((p: { in: string }) => p.in === where);
    const interns = params('/interns', 'get', 'query');
    assert.deepEqual(interns.map((p: { name: string }) => p.name).sort(), [
      'limit',
      'starting_after',
      'status',
      'workspace_id',
    ]);
    assert.ok(interns.every((p: { required: boolean }) => p.required === false));
    assert.deepEqual(
      params('/byok', 'get', 'query')
        .map((p: { name: string }) => p.name)
        .sort(),
      ['limit', 'offset', 'provider', 'workspace_id'],
    );
    assert.deepEqual(
      params('/workspaces', 'get', 'query')
        .map((p: { name: string }) => p.name)
        .sort(),
      ['limit', 'offset'],
    );
    const [idempotency] = params('/interns', 'post', 'header');
    assert.deepEqual(
      [idempotency.name, idempotency.required, idempotency.schema.maxLength],
      ['Idempotency-Key', false, 255],
    );
    assert.deepEqual(
      params('/messages', 'post', 'header').map((p: { name: string }) => p.name),
      ['X-Api-Key'],
    );
    assert.deepEqual(doc.paths['/openapi.json'].get.security, []);
  });
});

test('route modules read no request input themselves: every parameter passes through its route definition', () => {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  const modules = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? modules(join(d, e.name)) : e.name.endsWith('.routes.ts') ? [join(d, e.name)] : [],
    );
  const found = modules(dir).flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/req\.(query|params|body)\b(?! = null)(?<!raw: req\.body)|parseWith\(/g)].map(
      (m) => `${f.slice(dir.length)}: ${m[0]}`,
    ),
  );
  assert.deepEqual(found, []);
});
