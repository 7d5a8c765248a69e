// Each server tool's real behaviour through a real gateway, driven by the scripted model's
// `/tool NAME JSON`, against real servers on loopback for what lies outside this machine (a web
// site, SearXNG, Brave Search and Tavily, a provider's chat and image APIs). The hostile cases:
// web_fetch and web_search never reach the host's loopback (127.0.0.1, ::1, a name resolving to
// it), private ranges or a redirect into them; the command sandbox reads nothing of the host,
// reaches no loopback, runs under the tenant's filter and limits, and is gone after the request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { FAKE_IMAGE_B64, startFakeUpstream, type FakeUpstream } from './helpers/fake-upstream.ts';
import { space, upstreamEnv, user } from './helpers/inference-fixtures.ts';
import { startFakeSearch, startFakeWeb, type SearchHit } from './helpers/fake-web.ts';
import { waitFor } from './helpers/wait.ts';

type Step = { tool_name: string; status: string; result: string; images?: unknown[] };

/** Runs a script with the given server tools; the steps' results parsed. */
async function steps(
  s: { chat: (b: Record<string, unknown>) => Promise<{ status: number; body: any }> },
  tools: unknown[],
  script: string,
  extra = {},
) {
  const res = await s.chat({ model: 'local/scripted', tools, messages: [user(script)], ...extra });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const all: Step[] = res.body.choices[0].message.reasoning_details ?? [];
  return { res, steps: all, results: all.map((st) => JSON.parse(st.result)) };
}

/** Processes on this host running as `uid`. */
function processesOf(uid: number): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] === String(uid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('server tools', () => {
  let web: Awaited<ReturnType<typeof startFakeWeb>>;
  let results: SearchHit[] = [];
  let search: Awaited<ReturnType<typeof startFakeSearch>>;
  let up: FakeUpstream;
  /** Literal loopback listed for web tools; SearXNG; the sandbox (8 MiB, small outputs). */
  let gw: TestGateway;
  /** Any public host; Brave Search. */
  let open: TestGateway;
  before(async () => {
    web = await startFakeWeb();
    search = await startFakeSearch(() => results);
    up = await startFakeUpstream();
    gw = await startTestGateway({
      env: {
        ...upstreamEnv(up),
        COHORT_WEB_FETCH_EGRESS: `127.0.0.1:${web.port},localhost:${web.port}`,
        COHORT_WEB_FETCH_MAX_BYTES: String(1024 * 1024),
        COHORT_WEB_SEARCH_PROVIDER: 'searxng',
        COHORT_WEB_SEARCH_URL: `http://127.0.0.1:${search.port}`,
        COHORT_TOOL_SANDBOX_MB: '8',
        COHORT_SERVER_TOOL_OUTPUT_CHARS: '4000',
        COHORT_FUSION_MODELS: 'openai/gpt-4o-mini,local/scripted',
      },
    });
    open = await startTestGateway({
      env: {
        ...upstreamEnv(up),
        COHORT_WEB_FETCH_EGRESS: '*',
        COHORT_WEB_SEARCH_PROVIDER: 'brave',
        COHORT_WEB_SEARCH_URL: `http://127.0.0.1:${search.port}/res/v1/web/search`,
        COHORT_WEB_SEARCH_API_KEY: 'brave-key',
      },
    });
  });
  after(async () => {
    await gw.close();
    await open.close();
    await web.close();
    await search.close();
    await up.close();
  });

  test('datetime: the time in the zone asked, the configured zone, else UTC', async () => {
    const s = await space(gw, 'datetime');
    const { results: r } = await steps(
      s,
      [{ type: 'service:datetime', parameters: { timezone: 'Asia/Kolkata' } }],
      '/tool datetime {"timezone": "America/New_York"}\n/tool datetime {}',
    );
    assert.equal(r[0].timezone, 'America/New_York');
    assert.match(r[0].datetime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d-0[45]:00$/);
    assert.equal(r[1].timezone, 'Asia/Kolkata');
    assert.match(r[1].datetime, /\+05:30$/);
    assert.ok(Math.abs(r[1].unix - Date.now() / 1000) < 60);
  });

  test('web_fetch: a page as readable text, a redirect followed, a size bound, non-text refused', async () => {
    const s = await space(gw, 'fetch');
    const { results: r } = await steps(
      s,
      [{ type: 'service:web_fetch' }],
      [
        `/tool web_fetch {"url": "${web.url('/page')}"}`,
        `/tool web_fetch {"url": "${web.url('/redirect?to=/text')}"}`,
        `/tool web_fetch {"url": "${web.url('/big')}"}`,
        `/tool web_fetch {"url": "${web.url('/image')}"}`,
      ].join('\n'),
    );
    assert.deepEqual(r[0], {
      url: web.url('/page'),
      status: 200,
      content_type: 'text/html; charset=utf-8',
      title: 'Tide tables',
      content: '# High tide\n\nAt 06:12 & 18:40.',
      truncated: false,
    });
    assert.equal(r[1].url, web.url('/text'));
    assert.equal(r[1].content, 'plain words');
    // 1 MiB read at most, then cut to the output bound (4000 characters) for the model.
    assert.equal(r[2].truncated, true);
    assert.match(r[2].content, /…\[cut: \d+ more characters\]$/);
    assert.deepEqual(r[3], { error: 'the page is image/png, not text' });
  });

  test('web_fetch refuses the host: 127.0.0.1, ::1, private ranges, a name resolving to loopback, a redirect into it', async () => {
    const s = await space(open, 'fetch-hostile');
    const hits = web.hits.length;
    const targets = [
      'http://127.0.0.1/',
      `http://127.0.0.1:${web.port}/page`,
      'http://[::1]/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]/',
      'http://localhost/',
      'http://0.0.0.0/',
    ];
    const { results: r } = await steps(
      s,
      [{ type: 'service:web_fetch' }],
      targets.map((u) => `/tool web_fetch {"url": "${u}"}`).join('\n'),
    );
    assert.deepEqual(r, [
      { error: 'refused: 127.0.0.1 is an internal address (loopback, private or otherwise not public)' },
      {
        error: `refused: 127.0.0.1:${web.port} is not on this gateway's egress list for web tools (COHORT_WEB_FETCH_EGRESS)`,
      },
      { error: 'refused: ::1 is an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: 10.0.0.1 is an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: 192.168.1.1 is an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: 169.254.169.254 is an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: ::ffff:7f00:1 is an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: localhost resolves to an internal address (loopback, private or otherwise not public)' },
      { error: 'refused: 0.0.0.0 is an internal address (loopback, private or otherwise not public)' },
    ]);
    // On the gateway that lists the loopback site literally, a redirect to a name that resolves
    // to loopback is refused at that hop (the name is listed, its address is not public).
    const listed = await space(gw, 'fetch-redirect');
    const { results: r2 } = await steps(
      listed,
      [{ type: 'service:web_fetch' }],
      `/tool web_fetch {"url": "${web.url(`/redirect?to=http://localhost:${web.port}/secret`)}"}`,
    );
    assert.deepEqual(r2, [
      { error: 'refused: localhost resolves to an internal address (loopback, private or otherwise not public)' },
    ]);
    assert.deepEqual(
      web.hits.slice(hits).map((h) => h.path),
      [`/redirect?to=http://localhost:${web.port}/secret`],
    );
  });

  test('web_search on SearXNG: results filtered by domain; page reads through the egress policy', async () => {
    const s = await space(gw, 'search');
    results = [
      { title: 'Tides', url: web.url('/page'), snippet: 'tide tables' },
      { title: 'Secret', url: `http://localhost:${web.port}/secret`, snippet: 'no' },
      { title: 'Elsewhere', url: 'https://blocked.example/x', snippet: 'other' },
    ];
    const searched = search.hits.length;
    const { results: r } = await steps(
      s,
      [{ type: 'service:web_search', parameters: { max_characters: 100, excluded_domains: ['blocked.example'] } }],
      '/tool web_search {"query": "tides today"}',
    );
    assert.deepEqual(r[0], {
      query: 'tides today',
      results: [
        { title: 'Tides', url: web.url('/page'), snippet: 'tide tables', content: '# High tide\n\nAt 06:12 & 18:40.' },
        {
          title: 'Secret',
          url: `http://localhost:${web.port}/secret`,
          snippet: 'no',
          content: null,
          content_error:
            'refused: localhost resolves to an internal address (loopback, private or otherwise not public)',
        },
      ],
    });
    assert.equal(search.hits[searched]!.path, '/search?q=tides+today&format=json');
    assert.ok(!web.hits.some((h) => h.path === '/secret'));
  });

  test('web_search on Brave Search, and its result pages never read in the host or a private network', async () => {
    const s = await space(open, 'search-brave');
    results = ['http://127.0.0.1/secret', 'http://[::1]/', 'http://10.1.2.3/', 'http://localhost/'].map((url) => ({
      title: url,
      url,
      snippet: 's',
    }));
    const { results: r } = await steps(
      s,
      [{ type: 'service:web_search', parameters: { max_characters: 50, max_results: 4 } }],
      '/tool web_search {"query": "q"}',
    );
    assert.deepEqual(
      r[0].results.map((x: { content: unknown; content_error: string }) => [
        x.content,
        x.content_error.replace(/ \(.*\)$/, ''),
      ]),
      [
        [null, 'refused: 127.0.0.1 is an internal address'],
        [null, 'refused: ::1 is an internal address'],
        [null, 'refused: 10.1.2.3 is an internal address'],
        [null, 'refused: localhost resolves to an internal address'],
      ],
    );
    assert.equal(search.hits.at(-1)!.headers['x-subscription-token'], 'brave-key');
    assert.match(search.hits.at(-1)!.path, /^\/res\/v1\/web\/search\?q=q&count=8$/);
  });

  test('web_search on Tavily', async () => {
    const tav = await startTestGateway({
      env: {
        COHORT_WEB_SEARCH_PROVIDER: 'tavily',
        COHORT_WEB_SEARCH_URL: `http://127.0.0.1:${search.port}/tavily`,
        COHORT_WEB_SEARCH_API_KEY: 'tvly-key',
      },
    });
    try {
      const s = await space(tav, 'search-tavily');
      results = [{ title: 'A', url: 'https://a.example/', snippet: 'alpha' }];
      const { results: r } = await steps(s, [{ type: 'service:web_search' }], '/tool web_search {"query": "alpha"}');
      assert.deepEqual(r[0], {
        query: 'alpha',
        results: [{ title: 'A', url: 'https://a.example/', snippet: 'alpha' }],
      });
      assert.deepEqual(JSON.parse(search.hits.at(-1)!.body), { query: 'alpha', max_results: 10 });
    } finally {
      await tav.close();
    }
  });

  test('bash, shell and apply_patch share one sandbox per request: files last for the request, nothing of the host is there', async () => {
    const s = await space(gw, 'sandbox');
    const port = new URL(gw.url).port;
    const { results: r } = await steps(
      s,
      [{ type: 'service:bash' }, { type: 'service:shell' }, { type: 'service:apply_patch' }],
      [
        '/tool apply_patch {"input": "*** Begin Patch\\n*** Add File: notes/a.txt\\n+one\\n+two\\n*** End Patch"}',
        '/tool apply_patch {"input": "*** Begin Patch\\n*** Update File: notes/a.txt\\n@@\\n one\\n-two\\n+2\\n*** End Patch"}',
        '/tool shell {"command": ["cat", "a.txt"], "workdir": "notes"}',
        `/tool bash {"command": "id -u; ls ${gw.dataDir} 2>&1; cat /etc/shadow 2>&1; (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>&1; unshare -U true 2>&1; echo done"}`,
        '/tool bash {"command": "head -c 20000000 /dev/zero 2>&1 > /work/big; echo $?"}',
        '/tool bash {"command": "sleep 5", "timeout_ms": 200}',
        '/tool bash {"command": "head -c 100000 /dev/zero | tr \'\\\\0\' x"}',
      ].join('\n'),
    );
    assert.deepEqual(r[0], { applied: [{ path: 'notes/a.txt', action: 'added' }] });
    assert.deepEqual(r[1], { applied: [{ path: 'notes/a.txt', action: 'updated' }] });
    assert.deepEqual(r[2], { exit_code: 0, stdout: 'one\n2\n', stderr: '' });
    const [uid, ...lines] = r[3].stdout.trim().split('\n');
    assert.ok(Number(uid) >= 100_000, `an unprivileged uid of the interns' range, not ${uid}`);
    assert.deepEqual(lines, [
      `ls: cannot access '${gw.dataDir}': No such file or directory`,
      'cat: /etc/shadow: No such file or directory',
      `/bin/bash: connect: Connection refused`,
      `/bin/bash: line 1: /dev/tcp/127.0.0.1/${port}: Connection refused`,
      'unshare: unshare failed: Operation not permitted',
      'done',
    ]);
    // The disk is the sandbox's 8 MiB.
    assert.match(r[4].stdout, /No space left on device\n1\n$/);
    assert.deepEqual(r[5], { exit_code: null, stdout: '', stderr: '', timed_out: true });
    assert.equal(r[6].exit_code, 0);
    assert.match(r[6].stdout, /^x+…\[cut: \d+ more characters\]$/);
    // The sandbox is gone with the request, and its uid is released.
    await waitFor('the sandbox processes end', () => processesOf(Number(uid)).length === 0);
    const uids = readdirSync(join(gw.dataDir, 'run', 'uids'));
    assert.ok(!uids.includes(uid!), 'the uid is no longer claimed');
    assert.ok(
      uids.some((f) => f.startsWith(`${uid}.released-`)),
      'the uid is quarantined',
    );
    // A new request has a new, empty sandbox.
    const again = await steps(s, [{ type: 'service:shell' }], '/shell cat notes/a.txt');
    assert.deepEqual(again.results[0], {
      exit_code: 1,
      stdout: '',
      stderr: 'cat: notes/a.txt: No such file or directory\n',
    });
  });

  test('a client that goes away stops the running command and destroys the sandbox', async () => {
    const s = await space(gw, 'sandbox-abort');
    const ctl = new AbortController();
    const res = await fetch(`${gw.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'local/scripted',
        stream: true,
        tools: [{ type: 'service:bash' }],
        messages: [user('/tool bash {"command": "id -u > /tmp/u; sleep 60"}')],
      }),
      signal: ctl.signal,
    });
    assert.equal(res.status, 200);
    let uid = 0;
    await waitFor(
      'the command starts',
      () => {
        const claimed = readdirSync(join(gw.dataDir, 'run', 'uids')).filter((f) => /^\d+$/.test(f));
        for (const f of claimed)
          if (readFileSync(join(gw.dataDir, 'run', 'uids', f), 'utf8').startsWith('tool-sandbox ')) uid = Number(f);
        return (
          uid > 0 && processesOf(uid).some((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep'))
        );
      },
      { timeoutMs: 10_000 },
    );
    ctl.abort();
    await waitFor('the sandbox is gone', () => processesOf(uid).length === 0);
  });

  test('subagent: a nested request with its own bounded loop, recorded as steps of the generation', async () => {
    const s = await space(gw, 'subagent');
    const { res, results: r } = await steps(
      s,
      [
        {
          type: 'service:subagent',
          parameters: { name: 'clock', tools: [{ type: 'service:datetime' }], max_tool_calls: 1 },
        },
      ],
      '/tool subagent {"task": "/tool datetime {}\\n/tool datetime {}\\n/say sub done"}\n/say parent done',
    );
    assert.equal(r[0].name, 'clock');
    assert.equal(r[0].model, 'local/scripted');
    assert.equal(r[0].tool_calls, 1);
    assert.equal(r[0].steps, 2);
    assert.match(r[0].output, /^datetime: \{"datetime":.*\nTool datetime is not available\.$/s);
    const rows = await s.log();
    assert.deepEqual(
      rows.map((x) => [x.step, x.generationId]),
      [1, 2, 3, 4].map((n) => [n, res.body.id]),
    );
    assert.equal(
      res.body.usage.total_tokens,
      rows.reduce((n, x) => n + x.totalTokens!, 0),
    );
  });

  test('advisor: a second model asked about the conversation', async () => {
    const s = await space(gw, 'advisor');
    const before = up.received.length;
    const { results: r } = await steps(
      s,
      [{ type: 'service:advisor', parameters: { model: 'openai/gpt-4o-mini', instructions: 'Be brief.' } }],
      '/tool advisor {"question": "Is this plan sound?"}',
    );
    assert.equal(r[0].model, 'openai/gpt-4o-mini');
    assert.match(r[0].advice, /^You said: The conversation so far:\nuser: \/tool advisor/);
    const sent = up.received.slice(before)[0]!.body.messages as { role: string; content: string }[];
    assert.deepEqual(sent[0], { role: 'system', content: 'Be brief.' });
    assert.match(sent[1]!.content, /The assistant asks: Is this plan sound\?$/);
  });

  test("fusion: several models answer side by side, one merges; over the key's concurrency a model cannot answer", async () => {
    const s = await space(gw, 'fusion');
    const { results: r } = await steps(s, [{ type: 'service:fusion' }], '/tool fusion {"prompt": "/say forty-two"}');
    assert.deepEqual(r[0].answers, [
      { model: 'openai/gpt-4o-mini', content: 'forty-two' },
      { model: 'local/scripted', content: 'forty-two' },
    ]);
    assert.match(r[0].answer, /^You said: Question: \/say forty-two\n\nAnswer 1 \(openai\/gpt-4o-mini\):\nforty-two/);
    const tight = await startTestGateway({ env: { ...upstreamEnv(up), COHORT_MAX_MODEL_REQUESTS_PER_KEY: '1' } });
    try {
      const t = await space(tight, 'fusion-tight');
      const { results: r2 } = await steps(
        t,
        [{ type: 'service:fusion', parameters: { analysis_models: ['local/scripted'] } }],
        '/tool fusion {"prompt": "/say hi"}',
      );
      assert.match(
        r2[0].error,
        /^no model answered: local\/scripted: too many concurrent model requests for this API key/,
      );
    } finally {
      await tight.close();
    }
  });

  test("image_generation: the workspace's default_image_model through the provider's image API; the image goes to the client", async () => {
    const s = await space(gw, 'images', { default_image_model: 'openai/gpt-image-1' });
    const {
      res,
      steps: st,
      results: r,
    } = await steps(
      s,
      [{ type: 'service:image_generation', parameters: { size: '1024x1024' } }],
      '/tool image_generation {"prompt": "a lighthouse"}',
    );
    assert.deepEqual(r[0], {
      model: 'openai/gpt-image-1',
      image: 'generated and shown to the user',
      revised_prompt: 'a picture of a lighthouse',
    });
    const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${FAKE_IMAGE_B64}` } };
    assert.deepEqual(st[0]!.images, [image]);
    assert.deepEqual(res.body.choices[0].message.images, [image]);
    assert.ok(!st[0]!.result.includes(FAKE_IMAGE_B64), 'the model never gets the image data');
    const sent = [...up.received].reverse().find((x) => x.path.endsWith('/images/generations'))!;
    assert.equal(sent.path, '/v1/images/generations');
    assert.deepEqual(sent.body, { model: 'gpt-image-1', prompt: 'a lighthouse', n: 1, size: '1024x1024' });
    const rows = await s.log();
    assert.deepEqual(
      rows.map((x) => [x.step, x.model, x.totalTokens]),
      [
        [1, 'local/scripted', rows[0]!.totalTokens],
        [2, 'openai/gpt-image-1', 110],
        [3, 'local/scripted', rows[2]!.totalTokens],
      ],
    );
  });

  test("tool_search and experimental__search_models: this installation's tools and the models the workspace can use", async () => {
    const s = await space(gw, 'catalogue', { disabled_server_tools: ['service:advisor'] });
    const { results: r } = await steps(
      s,
      [
        { type: 'service:tool_search' },
        { type: 'service:experimental__search_models' },
        { type: 'function', function: { name: 'lookup_order', description: 'Find an order by number' } },
      ],
      '/tool tool_search {"query": "advisor order"}\n/tool experimental__search_models {"query": "scripted"}',
    );
    assert.deepEqual(
      r[0].tools.map((t: { name: string; available: boolean; unavailable_because?: string }) => [
        t.name,
        t.available,
        t.unavailable_because,
      ]),
      [
        ['advisor', false, 'disabled in this workspace'],
        ['lookup_order', true, undefined],
      ],
    );
    assert.deepEqual(
      r[1].models.map((m: { id: string }) => m.id),
      ['local/scripted'],
    );
  });

  test('the loop deadline: a tool still running is stopped and the final turn answers', async () => {
    const slow = await startTestGateway({
      env: { COHORT_WEB_FETCH_EGRESS: `127.0.0.1:${web.port}`, COHORT_SERVER_TOOLS_DEADLINE_MS: '300' },
    });
    try {
      const s = await space(slow, 'deadline');
      const { res, results: r } = await steps(
        s,
        [{ type: 'service:web_fetch' }],
        `/tool web_fetch {"url": "${web.url('/slow')}"}\n/tool web_fetch {"url": "${web.url('/page')}"}`,
      );
      assert.deepEqual(r, [{ error: 'stopped: the loop deadline passed' }]);
      assert.match(res.body.choices[0].message.content, /Tool web_fetch is not available\.$/);
    } finally {
      await slow.close();
    }
  });
});
