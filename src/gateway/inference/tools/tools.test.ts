// The tools' pure parts: the patch format, HTML to text, the bound on results, zoned time, the
// egress check of a URL, and the entries a request names (tools and plugins).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyHunks, parsePatch } from './patch.ts';
import { htmlToText } from './html-text.ts';
import { boundResult, toolEntries } from './index.ts';
import { zonedIso } from './datetime.ts';
import { checkTarget } from './guarded-fetch.ts';
import { parseEgress } from '../../../shared/egress-policy.ts';

test('patch: add, update with context and an anchor, move, delete; bad patches name the line', () => {
  const ops = parsePatch(
    [
      '*** Begin Patch',
      '*** Add File: src/new.txt',
      '+hello',
      '+world',
      '*** Update File: a.py',
      '*** Move to: b.py',
      '@@ def f():',
      '     x = 1',
      '-    return x',
      '+    return x + 1',
      '*** Delete File: old.txt',
      '*** End Patch',
    ].join('\n'),
  );
  assert.deepEqual(ops[0], { kind: 'add', path: 'src/new.txt', content: 'hello\nworld\n' });
  assert.deepEqual(ops[2], { kind: 'delete', path: 'old.txt' });
  const up = ops[1]!;
  assert.equal(up.kind, 'update');
  if (up.kind !== 'update') return;
  assert.equal(up.moveTo, 'b.py');
  const before = 'def g():\n    x = 1\n    return x\n\ndef f():\n    x = 1\n    return x\n';
  assert.equal(
    applyHunks(before, up.hunks, 'a.py'),
    'def g():\n    x = 1\n    return x\n\ndef f():\n    x = 1\n    return x + 1\n',
  );
  assert.throws(() => applyHunks('nothing\n', up.hunks, 'a.py'), /a.py: could not find the line "def f\(\):"/);
  assert.throws(() => parsePatch('hello'), /line 1: a patch starts with/);
  assert.throws(() => parsePatch('*** Begin Patch\n*** Add File: ../x\n+a\n*** End Patch'), /must be relative/);
  assert.throws(() => parsePatch('*** Begin Patch\n*** Add File: /etc/x\n+a\n*** End Patch'), /must be relative/);
  assert.throws(() => parsePatch('*** Begin Patch\n*** Frobnicate: x\n*** End Patch'), /line 2: expected/);
});

test('HTML to text: title, headings, lists, links, entities; scripts and styles dropped', () => {
  const page = htmlToText(
    '<html><head><title>A &amp; B</title><style>p{}</style></head><body><script>alert(1)</script><h1>Top</h1><p>One&nbsp;two <a href="https://x.test/">link</a></p><ul><li>a</li><li>b</li></ul><!-- note --></body></html>',
  );
  assert.deepEqual(page, { title: 'A & B', text: '# Top\n\nOne two [link](https://x.test/)\n\n- a\n- b' });
});

test('results are bounded: the longest strings cut first, the JSON still valid', () => {
  const out = boundResult({ stdout: 'x'.repeat(5000), exit_code: 0 }, 1000);
  assert.ok(out.length <= 1000, String(out.length));
  const parsed = JSON.parse(out);
  assert.equal(parsed.exit_code, 0);
  assert.match(parsed.stdout, /…\[cut: \d+ more characters\]$/);
  assert.equal(boundResult({ a: 1 }, 1000), '{"a":1}');
});

test('zoned time: the offset of the zone at the instant', () => {
  const at = new Date('2026-07-01T12:00:00Z');
  assert.deepEqual(zonedIso(at, 'Europe/Paris'), { iso: '2026-07-01T14:00:00+02:00', offsetMinutes: 120 });
  assert.deepEqual(zonedIso(at, 'America/St_Johns'), { iso: '2026-07-01T09:30:00-02:30', offsetMinutes: -150 });
  assert.deepEqual(zonedIso(at, 'UTC'), { iso: '2026-07-01T12:00:00+00:00', offsetMinutes: 0 });
});

test('egress of web tools: schemes, credentials, the list, any public host on 80 and 443 only, domains', () => {
  const env = (spec: string) => ({
    policy: spec === '*' ? { rules: [] } : parseEgress(spec),
    anyPublic: spec === '*',
    maxBytes: 1,
    timeoutMs: 1,
    source: 'COHORT_WEB_FETCH_EGRESS',
  });
  const check = (url: string, spec: string, domains = {}) => checkTarget(new URL(url), env(spec), domains);
  assert.throws(() => check('file:///etc/passwd', '*'), /only http and https/);
  assert.throws(() => check('http://u:p@example.com/', '*'), /credentials/);
  assert.throws(() => check('http://example.com:8080/', '*'), /example.com:8080 is not on this gateway's egress list/);
  assert.deepEqual(check('https://example.com/', '*'), { host: 'example.com', port: 443, literal: false });
  assert.deepEqual(check('http://127.0.0.1:9/', '127.0.0.1:9'), { host: '127.0.0.1', port: 9, literal: true });
  assert.throws(() => check('https://other.org/', 'example.com'), /not on this gateway's egress list/);
  assert.throws(() => check('https://a.example.com/', '*', { allowed: ['b.example.com'] }), /allowed_domains/);
  assert.throws(() => check('https://a.example.com/', '*', { blocked: ['example.com'] }), /blocked_domains/);
});

test("a request's server tools: from tools with their parameters, then plugins (not disabled ones), each once", () => {
  assert.deepEqual(
    toolEntries({
      tools: [
        { type: 'function' },
        { type: 'service:datetime', parameters: { timezone: 'UTC' } },
        { type: 'service:datetime' },
      ],
      plugins: [{ id: 'web', max_results: 3 }, { id: 'web-fetch', enabled: false }, { id: 'auto-router' }],
    }),
    [
      { type: 'service:datetime', config: { timezone: 'UTC' }, field: 'tools.1' },
      { type: 'service:web_search', config: { max_results: 3 }, field: 'plugins.0' },
    ],
  );
});
