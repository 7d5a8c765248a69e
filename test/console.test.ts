// The web console in a real browser (Debian's chromium driven by playwright-core) against a real
// gateway with real intern daemons and the scripted model: every screen, its flows, its refusals
// in words, and what it must never do with the key. A screenshot of each screen goes to
// artifacts/console/. Without /usr/bin/chromium the browser tests skip saying why (.ci/run
// installs it, so CI runs them).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Browser, Page } from 'playwright-core';
import { interns } from '../src/gateway/store/schema-interns.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { killGroup } from './helpers/interns.ts';
import { launchChromium, noBrowser, unlabelledControls } from './helpers/browser.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { CONSOLE_DIR, CONTENT_SECURITY_POLICY } from '../src/gateway/console.ts';

if (noBrowser) process.stderr.write(`# console browser tests skipped: ${noBrowser}\n`);
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'artifacts', 'console');

/** The build runs at npm install; a checkout that skipped it builds here (never over a build another test may be reading). */
async function ensureConsoleBuilt() {
  if (existsSync(join(CONSOLE_DIR, 'index.html'))) return;
  // @ts-expect-error: a plain .mjs build script, without types
  const { buildConsole } = await import('../console/build.mjs');
  await buildConsole();
}

describe('the console is served at / with a strict policy', () => {
  let gw: TestGateway;
  before(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway();
  });
  after(() => gw.close());
  const origin = () => gw.url.replace('/api/v1', '');

  test('a browser gets the page, compressed, uncached, same-origin only; other clients the JSON index', async () => {
    const page = await fetch(origin() + '/', { headers: { accept: 'text/html,*/*', 'accept-encoding': 'gzip' } });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('content-encoding'), 'gzip');
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    assert.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    const html = await page.text();
    assert.doesNotMatch(html, /https?:\/\//, 'the page names no other origin');
    const script = /src="(\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(origin() + script, { headers: { 'accept-encoding': 'br' } });
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(asset.headers.get('content-encoding'), 'br');
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(asset.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);

    const json = await fetch(origin() + '/');
    assert.equal(json.status, 200);
    assert.deepEqual(await json.json(), {
      name: 'cohort',
      api: '/api/v1',
      openapi: '/api/v1/openapi.json',
      models: '/api/v1/models',
      health: '/health',
      ready: '/ready',
      metrics: '/metrics',
    });
    const missing = await fetch(origin() + '/assets/main-NOPE.js');
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: { code: 404, message: 'resource not found' } });
    for (const p of ['/assets/../../package.json', '/assets/%2e%2e%2fpackage.json'])
      assert.equal((await fetch(origin() + p)).status, 404, p);
  });

  test('the policy names no origin but its own', () => {
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /https?:|\*|unsafe-inline|unsafe-eval/);
    assert.match(CONTENT_SECURITY_POLICY, /default-src 'none'/);
    assert.match(CONTENT_SECURITY_POLICY, /connect-src 'self'/);
  });
});

describe('the console in a browser', { skip: noBrowser }, () => {
  let gw: TestGateway;
  let git: GitServer;
  let browser: Browser;
  let page: Page;
  const log = new PassThrough();
  let logged = '';
  const urls: string[] = [];
  const origin = () => gw.url.replace('/api/v1', '');
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const main = () => page.locator('main');
  /** The error shown next to a field, found by the field's own description. */
  const fieldError = async (label: string | RegExp) => {
    const field = page.getByLabel(label, { exact: typeof label === 'string' });
    await field.and(page.locator('[aria-invalid=true]')).waitFor();
    const ids = (await field.getAttribute('aria-describedby')) ?? '';
    const id = ids.split(' ').find((i) => i.endsWith('-error'));
    assert.ok(id, `no error described for ${label}`);
    return page.locator(`[id="${id}"]`).innerText();
  };

  /** Visible text below WCAG AA contrast against its background (4.5:1, or 3:1 for large text);
   * disabled controls are exempt. Plain JavaScript: the test's own compiler would add helpers the page lacks. */
  const lowContrast = (): Promise<string[]> =>
    page.evaluate(`(() => {
      const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
      const channel = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      const lum = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
      const background = (el) => {
        for (; el; el = el.parentElement) {
          const c = rgb(getComputedStyle(el).backgroundColor);
          if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c;
        }
        return [255, 255, 255];
      };
      const bad = [];
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!n.textContent.trim() || !el.checkVisibility() || el.closest(':disabled, .visually-hidden, option')) continue;
        const style = getComputedStyle(el);
        const a = lum(rgb(style.color));
        const b = lum(background(el));
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        const size = parseFloat(style.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
        if (!(ratio >= (large ? 3 : 4.5))) bad.push(ratio.toFixed(2) + ' ' + n.textContent.trim().slice(0, 40));
      }
      return bad;
    })()`);

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await ensureConsoleBuilt();
    log.on('data', (d) => (logged += d));
    git = await startGitServer();
    gw = await startTestGateway({
      logTo: log,
      env: { LOG_LEVEL: 'debug', COHORT_KEEPALIVE_MS: '500', COHORT_GIT_HOSTS: git.host },
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    // A step that hangs fails in seconds rather than Playwright's 30, so one failure does not cost the rest their time.
    page.setDefaultTimeout(15_000);
    page.on('request', (r) => urls.push(r.url()));
  });
  after(async () => {
    await browser?.close();
    for (const r of await gw.ctx.store.db.select({ pid: interns.daemonPid }).from(interns)) killGroup(r.pid);
    await gw.close();
    await git?.close();
  });

  test('the key screen takes a key from the keyboard; a wrong key is refused in words', async () => {
    await page.goto(origin() + '/');
    await shot('key');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'f-key', 'the key field is the first stop');
    await page.keyboard.type('ck-not-a-real-key-000000000000000000000000000');
    await page.keyboard.press('Enter');
    assert.equal(await fieldError('API key'), 'invalid or revoked API key');
    await page.getByLabel('API key').fill(gw.keys.management_key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
    assert.deepEqual(await page.getByRole('navigation', { name: 'Screens' }).getByRole('link').allInnerTexts(), [
      'Interns',
      'Workspaces',
      'Presets',
      'Credentials',
      'Keys',
      'Guardrails',
      'Usage',
    ]);
  });

  test('interns: a bad model shows the server’s error by the field; create, provision, see it run', async () => {
    await page.getByLabel('Name').fill('ada');
    await page.getByLabel('Model or preset').fill('not-a-model');
    await page.getByRole('button', { name: 'Create intern' }).click();
    assert.equal(await fieldError('Model or preset'), 'must be provider/model (e.g. openai/gpt-4o) or @preset/<slug>');
    await page.getByLabel('Model or preset').fill('local/scripted');
    await page.getByRole('button', { name: 'Create intern' }).click();
    const row = page.locator('tr[data-intern="ada"]');
    await row.getByText('running').waitFor({ timeout: 60_000 });
    assert.equal(await row.locator('code').innerText(), 'local/scripted');
    assert.deepEqual(await unlabelledControls(page), []);
    assert.deepEqual(await lowContrast(), []);
    await shot('interns');
  });

  test('chat: a turn streams text, with its reasoning folded away, and its usage', async () => {
    await page.locator('tr[data-intern="ada"]').getByRole('link', { name: 'ada', exact: true }).click();
    await page.getByRole('heading', { name: 'ada', level: 1 }).waitFor();
    await page.getByLabel('Message').fill('/think pondering first\n/say hello from the console');
    await page.getByRole('button', { name: 'Send' }).click();
    const turn = page.locator('article.turn').last();
    await turn.locator('.usage').waitFor();
    assert.equal(await turn.locator('.reply > .text').innerText(), 'hello from the console');
    const reasoning = turn.locator('details.reasoning');
    assert.equal(await reasoning.getAttribute('open'), null, 'reasoning starts folded');
    await reasoning.locator('summary').click();
    assert.equal(await reasoning.locator('.text').innerText(), 'pondering first');
    assert.match(
      await turn.locator('.usage').innerText(),
      /^\d+ prompt \+ \d+ completion tokens, \$\d+\.\d{6} · local\/scripted$/,
    );
  });

  test('chat: a question is a form; accepting it continues the same run', async () => {
    await page.getByLabel('Message').fill('/ask What is your name?\n/say Nice to meet you.');
    await page.keyboard.press('Enter');
    const form = page.getByRole('form', { name: 'The intern asks' });
    await form.waitFor();
    assert.equal(await form.locator('p').first().innerText(), 'What is your name?');
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'answer');
    await shot('chat-question');
    await form.getByRole('button', { name: 'Accept' }).click();
    assert.equal(
      await form.getByLabel('answer').evaluate((el: HTMLInputElement) => el.validity.valueMissing),
      true,
      'a required field is required',
    );
    await form.getByLabel('answer').fill('Grace');
    await form.getByRole('button', { name: 'Accept' }).click();
    const turn = page.locator('article.turn').last();
    await turn.locator('.usage').waitFor();
    assert.match(await turn.locator('.reply').innerText(), /Grace[\s\S]*Nice to meet you\./);
    assert.equal(await form.locator('.answered').innerText(), 'You answered: Accepted (answer: "Grace")');
  });

  test('chat: a manual shell command shows what will run and where; Allow once runs it', {
    skip: noSandbox,
  }, async () => {
    await page.getByLabel('Approval').selectOption('manual');
    await page.getByLabel('Message').fill('/shell echo approved-by-button');
    await page.getByRole('button', { name: 'Send' }).click();
    const ask = page.getByRole('group', { name: 'Permission requested: shell' });
    await ask.waitFor();
    assert.equal(await ask.locator('pre.command').innerText(), 'echo approved-by-button');
    assert.equal((await ask.innerText()).split('echo approved-by-button').length, 2, 'the command is shown once');
    assert.match(await ask.innerText(), /Run in the sandbox\s+echo approved-by-button/);
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Allow once');
    assert.match(await ask.innerText(), /In the inner sandbox: read-only system, writable work folder, no network\./);
    const buttons = await ask.getByRole('button').allInnerTexts();
    assert.ok(buttons.includes('Allow once') && buttons.includes('Cancel the turn'), buttons.join());
    await shot('chat-permission');
    await ask.getByRole('button', { name: 'Allow once' }).click();
    const turn = page.locator('article.turn').last();
    await turn.locator('.usage').waitFor();
    assert.match(await turn.locator('.reply').innerText(), /shell: approved-by-button/);
    await page.getByLabel('Approval').selectOption('self-drive');
  });

  test('chat: steering reaches the running turn', async () => {
    await page.getByLabel('Message').fill('/say go\n/sleep 2500\n/say end');
    await page.getByRole('button', { name: 'Send' }).click();
    const turn = page.locator('article.turn').last();
    // Steered once the model has begun (on a loaded machine a steer sent sooner came first).
    await turn.locator('.reply', { hasText: /^go/ }).waitFor();
    await page.getByRole('button', { name: 'Steer' }).waitFor();
    await page.getByLabel('Steer the running turn').fill('and also this');
    await page.getByRole('button', { name: 'Steer' }).click();
    await turn.getByText('You steered: and also this').waitFor();
    await turn.locator('.usage').waitFor();
    // The scripted model answers the steered message after the text it was streaming.
    assert.match(
      await turn.locator('.reply').innerText(),
      /^go\s+You steered: and also this\s+end[\s\S]*and also this$/,
    );
    await shot('chat');
  });

  test('chat: a reload keeps the session and answers its paused question', async () => {
    await page.getByLabel('Message').fill('/ask Favourite colour?');
    await page.keyboard.press('Enter');
    await page.getByRole('form', { name: 'The intern asks' }).last().waitFor();
    const turns = await page.locator('article.turn').count();
    await page.waitForFunction(
      () => document.querySelector('[role=status]')?.textContent === 'The intern is waiting for your answer.',
    );
    await page.reload();
    const form = page.getByRole('form', { name: 'The intern asks' }).last();
    await form.getByLabel('answer').fill('teal');
    await form.getByRole('button', { name: 'Accept' }).click();
    await page.locator('article.turn').last().locator('.usage').waitFor();
    assert.match(await page.locator('article.turn').last().innerText(), /teal/);
    assert.deepEqual(await lowContrast(), []);
    assert.equal(await page.locator('article.turn').count(), turns, 'the whole session came back');
    assert.equal(await page.getByRole('navigation', { name: 'Sessions' }).getByRole('listitem').count(), 1);
  });

  test('chat: a refusal is said in words, with Retry where the server says it may help', async () => {
    const created = await gw.call('POST', '/interns', { body: { name: 'idle' } });
    await page.goto(`${origin()}/#/interns/${created.body.id}`);
    await page.getByLabel('Message').fill('/say hi');
    await page.getByRole('button', { name: 'Send' }).click();
    const alert = page.locator('article.turn').last().getByRole('alert');
    await alert.waitFor();
    assert.match(
      await alert.innerText(),
      /^The intern is not running\. Provision it on the Interns screen, then retry\. the intern is not running \(status queued\): it was never provisioned/,
    );
    await alert.getByRole('button', { name: 'Retry' }).waitFor();
    await shot('chat-error');
  });

  test('presets: a bad body shows its field error; a chat body makes a preset with a designated version', async () => {
    await page.getByRole('link', { name: 'Presets' }).click();
    await page.getByLabel('Slug').fill('helper');
    await page.getByLabel('Chat completions request body (JSON)').fill('{"model": "local/scripted", "max_tokens": -5}');
    await page.getByRole('button', { name: 'Save preset' }).click();
    assert.match(await fieldError('Chat completions request body (JSON)'), /^max_tokens: /);
    await page
      .getByLabel('Chat completions request body (JSON)')
      .fill('{"model": "local/scripted", "max_tokens": 300, "messages": [{"role": "system", "content": "Be brief."}]}');
    await page.getByRole('button', { name: 'Save preset' }).click();
    const card = page.locator('li[data-preset="helper"]');
    await card.waitFor();
    assert.equal(await card.locator('p').first().innerText(), 'Designated: version 1 · model local/scripted');
    await page.getByRole('button', { name: 'Save preset' }).click();
    await card.getByText('Designated: version 2').waitFor();
    // Saving opens the preset's versions.
    const versions = card.getByRole('list', { name: 'Versions of helper' });
    await versions.getByText('Version 1').waitFor();
    assert.deepEqual(await versions.locator('li > strong').allInnerTexts(), ['Version 2', 'Version 1']);
    assert.equal(await versions.locator('.badge').count(), 1);
    assert.match(
      await versions.locator('li').first().innerText(),
      /Version 2designated[\s\S]*System prompt: Be brief\./,
    );
    assert.deepEqual(await unlabelledControls(page), []);
    assert.deepEqual(await lowContrast(), []);
    await shot('presets');
  });

  test('credentials: bad input shows field errors; created, masked, rotated, deleted; the raw key never shows', async () => {
    await page.getByRole('link', { name: 'Credentials' }).click();
    await page.getByLabel('Provider', { exact: true }).selectOption('anthropic');
    const raw = 'sk-ant-console-0123456789abcdefRAW';
    await page.getByLabel('Provider API key').fill(raw);
    await page.getByLabel('Name', { exact: true }).fill('team anthropic');
    await page.getByLabel('Allowed API key hashes').fill('not-a-hash');
    await page.getByRole('button', { name: 'Add credential' }).click();
    assert.match(await fieldError('Allowed API key hashes'), /must be 64 lowercase hex characters/);
    await page.getByLabel('Allowed API key hashes').fill('');
    await page.getByRole('button', { name: 'Add credential' }).click();
    const card = page.locator('li[data-credential="team anthropic"]');
    await card.waitFor();
    const label = await card.locator('code.label').innerText();
    assert.match(label, /…|\.\.\./);
    assert.ok(!label.includes(raw.slice(8, 24)), label);
    assert.equal(await page.getByLabel('Provider API key').inputValue(), '', 'the key field is emptied');
    await card.getByRole('button', { name: /^Rotate/ }).click();
    await card.getByLabel('New provider API key').fill('sk-ant-console-rotated-9876543210zz');
    await card.getByRole('button', { name: 'Replace the key' }).click();
    await card.locator('code.label', { hasText: /zz$/ }).waitFor();
    assert.ok(
      !(await page.content()).includes(raw) && !(await page.content()).includes('rotated-9876543210'),
      'no raw key in the page',
    );
    assert.deepEqual(await unlabelledControls(page), []);
    await shot('credentials');
    await card.getByRole('button', { name: /^Delete/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await card.waitFor({ state: 'detached' });
    assert.equal((await gw.call('GET', '/byok')).body.data.length, 0);
  });

  test('workspaces: a bad slug is refused by the field; create, then edit every field', async () => {
    await page.getByRole('link', { name: 'Workspaces' }).click();
    const form = page.getByRole('form', { name: 'New workspace' });
    await form.getByLabel('Name').fill('Research');
    await form.getByLabel('Slug').fill('Bad Slug');
    await form.getByRole('button', { name: 'Create workspace' }).click();
    assert.equal(await fieldError('Slug'), 'must be lowercase letters and digits in hyphen-separated groups');
    await form.getByLabel('Slug').fill('research');
    await form.getByRole('button', { name: 'Create workspace' }).click();
    const card = page.locator('li[data-workspace="research"]');
    await card.waitFor();
    await card.getByRole('button', { name: 'Edit Research' }).click();
    const edit = page.getByRole('form', { name: 'Edit Research' });
    await edit.getByLabel('Description').fill('The research team');
    await edit.getByLabel('Default text model').fill('local/scripted');
    await edit.getByLabel('Default image model').fill('openai/gpt-image-1');
    await edit.getByLabel('Provider sort').selectOption('latency');
    await edit.getByLabel('service:web_search').check();
    await edit.getByLabel('Count your own provider keys in budgets').check();
    await edit.getByLabel('Data discount logging').check();
    await edit.getByLabel('Broadcast to observability destinations').check();
    await edit.getByLabel('Log request and response bodies').check();
    await edit.getByLabel('Body logging sampling rate').fill('0.25');
    await edit.getByLabel('Log bodies only for these API key ids').fill('key-a, key-b');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    const saved = (await gw.call('GET', '/workspaces/research')).body.data;
    assert.deepEqual(
      {
        ...saved,
        id: undefined,
        created_at: undefined,
        updated_at: undefined,
        created_by: undefined,
        default_guardrail_id: undefined,
      },
      {
        name: 'Research',
        slug: 'research',
        description: 'The research team',
        default_text_model: 'local/scripted',
        default_image_model: 'openai/gpt-image-1',
        default_provider_sort: 'latency',
        disabled_server_tools: ['service:web_search'],
        include_byok_in_budgets: true,
        io_logging_api_key_ids: ['key-a', 'key-b'],
        io_logging_sampling_rate: 0.25,
        is_data_discount_logging_enabled: true,
        is_observability_broadcast_enabled: true,
        is_observability_io_logging_enabled: true,
        id: undefined,
        created_at: undefined,
        updated_at: undefined,
        created_by: undefined,
        default_guardrail_id: undefined,
      },
    );
    assert.ok(saved.updated_at);
    assert.deepEqual(await unlabelledControls(page), []);
    assert.deepEqual(await lowContrast(), []);
    await shot('workspaces');
  });

  test('usage: the request log per day and model, charted and tabled as GET /api/v1/activity gives it', async () => {
    // The turns above reached the model through the interns' keys: the account's request log has them.
    const res = await gw.call('GET', '/activity', { key: gw.keys.management_key });
    assert.equal(res.status, 200);
    const rows: { date: string; model: string; requests: number; prompt_tokens: number; completion_tokens: number }[] =
      res.body.data;
    assert.ok(rows.length >= 1 && rows.every((r) => r.requests > 0), JSON.stringify(rows));
    const byDay = new Map<string, number>();
    for (const r of rows) byDay.set(r.date, (byDay.get(r.date) ?? 0) + r.requests);
    const highest = Math.max(...byDay.values());
    await page.getByRole('link', { name: 'Usage' }).click();
    const chart = page.getByRole('img', {
      name: new RegExp(`requests per day, stacked by model; the highest day is ${highest}$`),
    });
    await chart.waitFor();
    assert.equal(await chart.locator('rect').count(), rows.length);
    assert.deepEqual(await page.locator('.legend li').allInnerTexts(), [...new Set(rows.map((r) => r.model))].sort());
    const first = [...rows].sort((a, b) => b.date.localeCompare(a.date) || a.model.localeCompare(b.model))[0]!;
    const cells = await page.locator('tbody tr').first().locator('td').allInnerTexts();
    assert.deepEqual(cells.slice(0, 4), [
      first.date,
      first.model,
      String(first.requests),
      String(first.prompt_tokens + first.completion_tokens),
    ]);
    assert.match(cells[4]!, /^\$\d/);
    await page.getByLabel('Show', { exact: true }).selectOption('cost');
    await page.getByRole('img', { name: /cost per day, stacked by model; the highest day is \$/ }).waitFor();
    // The latest requests one by one, as GET /generations gives them, each with its bodies on demand.
    const gens = (await gw.call('GET', '/generations?limit=25', { key: gw.keys.management_key })).body.data;
    const latest = page.getByRole('table', { name: 'Latest requests' });
    await latest.waitFor();
    assert.equal(await latest.locator('tbody tr').count(), gens.length);
    const firstCells = await latest.locator('tbody tr').first().locator('td').allInnerTexts();
    assert.deepEqual(firstCells.slice(1, 3), [gens[0].model, String(gens[0].status)]);
    const content = await gw.call('GET', `/generation/content?id=${gens[0].id}`, { key: gw.keys.management_key });
    await latest.getByRole('button', { name: `Show the bodies of ${gens[0].id}` }).click();
    if (content.status === 200)
      assert.equal(await latest.locator('pre.output').innerText(), content.body.data.output.completion ?? '');
    else await latest.getByText('Its bodies were not kept').waitFor();
    assert.deepEqual(await lowContrast(), []);
    await shot('usage');
  });

  test('files: browse, view, upload and download an intern’s files; a repository’s diff, and a push to a new branch', {
    skip: noSandbox,
  }, async () => {
    const url = git.seed('site', { 'index.html': '<h1>hi</h1>\n', 'docs/guide.md': 'read me\n' });
    const made = await gw.call('POST', '/interns', {
      body: { name: 'filer', provision: true, repositories: [{ url }] },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    await gw.ctx.interns.idle();
    const id = made.body.id as string;
    // The intern's own commit, made by a scripted-model turn in its shell.
    const turn = await fetch(`${gw.url}/interns/${id}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.keys.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        stream: true,
        messages: [
          {
            role: 'user',
            content:
              '/shell cd site && echo "<p>by the intern</p>" >> index.html && git -c user.name=i -c user.email=i@example.com commit -qam edit && echo committed',
          },
        ],
      }),
    });
    assert.match(await turn.text(), /committed/);

    await page.goto(`${origin()}/#/interns`);
    await page.locator('tr[data-intern="filer"]').getByRole('link', { name: 'Files of filer' }).click();
    await page.getByRole('heading', { name: 'Files', level: 1 }).waitFor();
    // The listing, or the problem shown instead of it (named in the failure, not left to a timeout).
    await page.locator('tr[data-entry="site"], [role=alert]').first().waitFor({ timeout: 60_000 });
    assert.equal(await page.getByRole('alert').count(), 0, await page.locator('main').innerText());
    await page.locator('tr[data-entry="site"]').getByRole('link', { name: 'site' }).click();
    await page.locator('tr[data-entry="docs"]').waitFor();
    assert.deepEqual(
      await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-entry'))),
      ['.git', 'docs', 'index.html'],
    );
    await page.getByRole('link', { name: 'docs' }).click();
    await page.getByRole('link', { name: 'guide.md' }).click();
    assert.equal(await page.locator('pre.file').innerText(), 'read me\n');
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download site/docs/guide.md' }).click(),
    ]);
    assert.equal(file.suggestedFilename(), 'guide.md');

    await page.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'docs' }).click();
    await page
      .getByLabel('Upload files here')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('from the browser') });
    await page.locator('tr[data-entry="notes.txt"]').waitFor();
    const stored = await fetch(`${gw.url}/interns/${id}/files/site/docs/notes.txt`, {
      headers: { authorization: `Bearer ${gw.keys.api_key}` },
    });
    assert.equal(await stored.text(), 'from the browser');
    const [tar] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download this folder (tar)' }).click(),
    ]);
    assert.equal(tar.suggestedFilename(), 'docs.tar');

    await page.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'work' }).click();
    const repo = page.locator('[data-repository="site"]');
    await repo.getByRole('button', { name: 'Show diff of site' }).click();
    assert.match(await page.getByLabel('Diff of site').innerText(), /^\+<p>by the intern<\/p>$/m);
    await repo.getByLabel('New branch for site').fill('cohort/from-console');
    await repo.getByRole('button', { name: 'Push site' }).click();
    const said = await repo.getByRole('status').innerText();
    assert.match(said, /^Pushed [0-9a-f]{12} to the new branch cohort\/from-console\.$/);
    assert.equal(git.git('site', ['show', 'cohort/from-console:index.html']), '<h1>hi</h1>\n<p>by the intern</p>\n');
    assert.deepEqual(await unlabelledControls(page), []);
    assert.deepEqual(await lowContrast(), []);
    await shot('files');
    // Once more: the branch exists now, and the console says so in words.
    await repo.getByRole('button', { name: 'Push site' }).click();
    await page.getByRole('alert').getByText('already exists on the remote').waitFor();
  });

  test('at phone width every screen fits without sideways scrolling', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const screen of ['interns', 'workspaces', 'presets', 'credentials', 'usage']) {
      await page.goto(`${origin()}/#/${screen}`);
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), `${screen} scrolls sideways`);
    }
    await page.goto(`${origin()}/#/interns`);
    await page.locator('tr[data-intern="ada"]').getByRole('link', { name: 'ada', exact: true }).click();
    await page.locator('article.turn').first().waitFor();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'chat scrolls sideways');
    await shot('chat-phone');
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  test('the policy blocks any other origin, even loopback on another port', async () => {
    const blocked = await page.evaluate(async () => {
      const seen = new Promise<string>((resolve) =>
        document.addEventListener('securitypolicyviolation', (e) => resolve(e.violatedDirective), { once: true }),
      );
      const result = await fetch('http://127.0.0.1:9/').then(
        () => 'fetched',
        () => 'refused',
      );
      return { result, directive: await seen };
    });
    assert.deepEqual(blocked, { result: 'refused', directive: 'connect-src' });
  });

  test('an ordinary key sees no management screen, and the API refuses it anyway', async () => {
    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key').fill(gw.keys.api_key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
    assert.deepEqual(await page.getByRole('navigation', { name: 'Screens' }).getByRole('link').allInnerTexts(), [
      'Interns',
    ]);
    assert.equal(await page.getByText('Model or preset').count(), 1);
    await page.goto(`${origin()}/#/credentials`);
    assert.equal(await main().getByRole('alert').innerText(), 'This screen needs a management key.');
    const refused = await page.evaluate(
      async (key) => (await fetch('/api/v1/byok', { headers: { authorization: `Bearer ${key}` } })).status,
      gw.keys.api_key,
    );
    assert.equal(refused, 403);
    await page.goto(`${origin()}/#/usage`);
    assert.equal(await main().getByRole('alert').innerText(), 'This screen needs a management key.');
    await shot('ordinary-key');
  });

  test('the key never reaches a URL, localStorage or the gateway log, and is gone from the tab once forgotten', async () => {
    const keys = [gw.keys.management_key, gw.keys.api_key];
    assert.ok(urls.length > 20);
    for (const k of keys) {
      assert.ok(!urls.some((u) => u.includes(k)), 'a URL carried a key');
      assert.ok(!logged.includes(k), 'the gateway log carried a key');
    }
    assert.ok(logged.includes('"url":"/api/v1/interns'), 'the log did record the console’s requests');
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('cohort.key')), gw.keys.api_key);
    await page.getByRole('button', { name: 'Forget key' }).click();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('cohort.key')), null);
    await page.getByLabel('API key').waitFor();
  });
});
