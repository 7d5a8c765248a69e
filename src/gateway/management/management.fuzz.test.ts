// Property test: generated bad input at every management route gets a documented 4xx in exactly
// the {error:{code,message}} shape, never a 500 or a stack trace, and a rejected request writes
// nothing. Runs per route: FUZZ_RUNS (default 100).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import { startTestGateway, type TestGateway } from '../../../test/helpers/gateway.ts';
import { MANAGEMENT_ROUTES, type ManagementRoute } from '../../../test/helpers/management-routes.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const FIELDS = [
  'name',
  'slug',
  'description',
  'default_text_model',
  'disabled_server_tools',
  'io_logging_api_key_ids',
  'io_logging_sampling_rate',
  'key',
  'provider',
  'workspace_id',
  'allowed_api_key_hashes',
  'allowed_models',
  'allowed_user_ids',
  'is_byok_only',
  'is_fallback',
  'sort_order',
  'model',
  'models',
  'fallbacks',
  'max_tokens',
  'system',
  'messages',
  'instructions',
  'user',
  'session_id',
  'route',
  'speed',
  'plugins',
  'provider',
  'stop_server_tools_when',
  'cache_control',
  'metadata',
  'trace',
  'output_config',
  'temperature',
  'unknown_field',
];

type Body = { kind: 'json'; value: unknown } | { kind: 'raw'; text: string; type: string } | { kind: 'huge' };
type Req = { param: string; query: Record<string, string>; body: Body };

const field = fc.constantFrom(...FIELDS);
const anyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 1, max: 70_000 }).map((n) => 'x'.repeat(n)),
  fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.jsonValue({ maxDepth: 1 })).map(([n, v]) => Array(n).fill(v)),
  fc.constantFrom(
    null,
    true,
    -1,
    0,
    1e308,
    'not-a-uuid',
    '00000000-0000-4000-8000-000000000000',
    'a'.repeat(64),
    [],
    {},
  ),
);
const body: fc.Arbitrary<Body> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.dictionary(field, anyValue, { maxKeys: 6 }).map((value) => ({ kind: 'json' as const, value })),
  },
  { weight: 2, arbitrary: fc.jsonValue().map((value) => ({ kind: 'json' as const, value })) },
  {
    weight: 1,
    arbitrary: fc.string({ maxLength: 60 }).map((text) => ({ kind: 'raw' as const, text, type: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .json()
      .map((j) => ({ kind: 'raw' as const, text: j.slice(0, Math.max(0, j.length - 1)), type: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'text/plain',
          'application/xml',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/octet-stream',
        ),
        fc.string({ maxLength: 40 }),
      )
      .map(([type, text]) => ({ kind: 'raw' as const, text: text || 'x', type })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'huge' as const }) },
);
const param = (existing: string[]) =>
  fc.oneof(
    fc.constantFrom(...existing),
    fc.uuid(),
    fc.string({ minLength: 1, maxLength: 80 }),
    fc.constantFrom('...', '%', 'a'.repeat(300), '0', '-1', '1.5', 'ZZZ', ' '),
  );
const query = fc.dictionary(
  fc.constantFrom('offset', 'limit', 'workspace_id', 'provider', 'x'),
  fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String)),
  { maxKeys: 3 },
);

describe('management routes under generated bad input', () => {
  let gw: TestGateway;
  const logLines: string[] = [];
  const existing = { ids: [] as string[], slugs: ['seeded', 'fuzz-ws'] };

  before(async () => {
    const logTo = new Writable({ write: (chunk, _enc, cb) => (logLines.push(String(chunk)), cb()) });
    gw = await startTestGateway({ env: { LOG_LEVEL: 'info' }, logTo });
    const ws = await send('POST', '/workspaces', { kind: 'json', value: { name: 'Fuzz', slug: 'fuzz-ws' } });
    const cred = await send('POST', '/byok', {
      kind: 'json',
      value: { key: 'fuzz-provider-key-0000', provider: 'openai' },
    });
    await send('POST', '/presets/seeded/messages', { kind: 'json', value: { model: 'a/b' } });
    existing.ids.push(ws.body.data.id, cred.body.data.id);
  });
  after(() => gw.close());

  async function send(method: string, path: string, b: Body | null) {
    const headers: Record<string, string> = { authorization: `Bearer ${gw.keys.management_key}` };
    let payload: string | undefined;
    if (b?.kind === 'json') [headers['content-type'], payload] = ['application/json', JSON.stringify(b.value)];
    if (b?.kind === 'raw') [headers['content-type'], payload] = [b.type, b.text];
    if (b?.kind === 'huge')
      [headers['content-type'], payload] = ['application/json', JSON.stringify({ name: 'x'.repeat(1_100_000) })];
    const res = await fetch(gw.url + path, { method, headers, body: payload });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed };
  }

  const TABLES = ['workspaces', 'presets', 'preset_versions', 'byok_credentials', 'organizations'];
  /** One digest of every stored management record, computed in the database. */
  const snapshot = async () => {
    const parts = TABLES.map((t) => `coalesce((select string_agg(r::text, '|' order by r.id) from ${t} r), '')`).join(
      ', ',
    );
    const res = (await gw.ctx.store.db.execute(sql.raw(`select md5(concat(${parts})) as h`))) as unknown as {
      rows: { h: string }[];
    };
    return res.rows[0]!.h;
  };

  function pathOf(route: ManagementRoute, req: Req): string {
    const path = route.path({ id: req.param, slug: req.param, version: req.param });
    const qs = new URLSearchParams(req.query).toString();
    return route.method === 'GET' && qs ? `${path}?${qs}` : path;
  }

  for (const route of MANAGEMENT_ROUTES) {
    test(`${route.method} ${route.template}`, async () => {
      const allowed = new Set([...route.statuses, 400, 404, ...(route.body ? [413] : [])]);
      const pool = route.method === 'DELETE' ? ['unknown-slug'] : [...existing.ids, ...existing.slugs];
      const arb = fc.record({
        param: param(pool),
        query,
        body: route.body ? body : fc.constant(null as unknown as Body),
      });
      await fc.assert(
        fc.asyncProperty(arb, async (req) => {
          const before = await snapshot();
          const res = await send(route.method, pathOf(route, req), route.body ? req.body : null);
          assert.ok(allowed.has(res.status), `status ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
          if (res.status >= 400) {
            assert.deepEqual(Object.keys(res.body), ['error']);
            assert.deepEqual(Object.keys(res.body.error), ['code', 'message']);
            assert.equal(res.body.error.code, res.status);
            assert.equal(typeof res.body.error.message, 'string');
            assert.doesNotMatch(res.body.error.message, /\n\s+at |node_modules|\.ts:\d+/);
            assert.equal(await snapshot(), before, 'a rejected request changed stored records');
          }
        }),
        { numRuns: RUNS },
      );
      // The log is live (each request's access line reaches it), and none of it is an error or a stack.
      assert.ok(
        logLines.some((l) => JSON.parse(l).msg === 'request'),
        'no access line reached the captured log',
      );
      const bad = logLines.filter((l) => JSON.parse(l).level >= 50 || l.includes('"stack"'));
      assert.deepEqual(bad, []);
    });
  }
});
