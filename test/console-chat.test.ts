// The console's chat as people expect a chat product to be, in Debian's chromium at 1280 × 800 and
// 390 × 844, light and dark, against a real gateway, a real intern and the scripted model:
// answers in Markdown with highlighted code and a copy button; nothing a model, a tool or a name
// carries runs as script; the page follows a stream until the reader scrolls up; at phone size the
// transcript has most of the screen (navigation and sessions in drawers); axe-core finds no
// serious violation on any screen. Screenshots of each state go to artifacts/console-chat/
// (git-ignored). Without /usr/bin/chromium these tests skip and say why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';
import { launchChromium, noBrowser } from './helpers/browser.ts';
import { waitFor } from './helpers/wait.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { seedSession } from './helpers/sessions.ts';
import { CONSOLE_DIR } from '../src/gateway/console.ts';

if (noBrowser) process.stderr.write(`# console chat browser tests skipped: ${noBrowser}\n`);
const claudeCode = (() => {
  try {
    import.meta.resolve('@zed-industries/claude-code-acp/dist/index.js');
    return true;
  } catch {
    return false;
  }
})();
const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'console-chat');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

type View = { name: string; width: number; height: number; dark: boolean };
const DESKTOP: View = { name: 'desktop-light', width: 1280, height: 800, dark: false };
const VIEWS: View[] = [
  DESKTOP,
  { name: 'desktop-dark', width: 1280, height: 800, dark: true },
  { name: 'phone-light', width: 390, height: 844, dark: false },
  { name: 'phone-dark', width: 390, height: 844, dark: true },
];

// Strings, not functions: the test's compiler would add helpers the page lacks.
const WATCH_POLICY = `window.violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));`;
/** Elements in the page's main area that only injected markup would make. */
const INJECTED = `[...document.querySelectorAll('main img, main script, main iframe, main style, main object, main embed, main [onerror], main [onclick], main a[href^="javascript"]')].map((e) => e.outerHTML)`;
const LOADED = () =>
  ![...document.querySelectorAll('main [role=status]')].some((e) => e.textContent!.startsWith('Loading'));
const AT_BOTTOM = () => {
  const t = document.querySelector('.transcript')!;
  return t.scrollHeight - t.scrollTop - t.clientHeight < 24;
};

async function ensureConsoleBuilt() {
  if (existsSync(join(CONSOLE_DIR, 'index.html'))) return;
  // @ts-expect-error: a plain .mjs build script, without types
  const { buildConsole } = await import('../console/build.mjs');
  await buildConsole();
}

describe('the console’s chat as a chat product', { skip: noBrowser }, () => {
  let f: InternFixture;
  let browser: Browser;
  let id: string;
  const contexts: BrowserContext[] = [];
  const origin = () => f.gw.url.replace('/api/v1', '');

  /** A new browser context of the view, signed in with the management key (or `key`). */
  async function open(view: View, key = f.gw.keys.management_key): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: view.width, height: view.height },
      colorScheme: view.dark ? 'dark' : 'light',
    });
    contexts.push(context);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: origin() });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await page.addInitScript(WATCH_POLICY);
    await page.goto(origin() + '/');
    await page.getByLabel('API key').fill(key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
    return page;
  }
  // A screenshot waits for the page's fonts first; on a machine at load 100 that took over the 20 s default.
  const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), timeout: 60_000 });
  /** Sends a prompt and waits for its turn to finish (its usage line). */
  async function turn(page: Page, prompt: string) {
    // The page opens the intern's most recent session from the gateway: its turns first.
    await page.locator('section.chat[aria-busy="false"]').waitFor();
    const n = await page.locator('article.turn').count();
    await page
      .getByLabel('Message')
      .fill(prompt)
      .catch(async (e) => {
        await shot(page, 'failed-no-message');
        throw e;
      });
    await page.keyboard.press('Enter');
    const t = page.locator('article.turn').nth(n);
    // The turn's end, however it ended (its class is its status): a turn that ended without a
    // usage line or an alert (interrupted, say) fails here with its status, not after a minute.
    await t
      .and(page.locator('article.turn:not(.turn-streaming)'))
      .waitFor({ timeout: 60_000 })
      .catch(async (e) => {
        await shot(page, 'failed-turn-never-ended');
        throw e;
      });
    // A refusal (the intern busy, say) fails the test with the console's own words.
    if (await t.getByRole('alert').count()) assert.fail(await t.getByRole('alert').innerText());
    assert.equal(await t.getAttribute('class'), 'turn turn-done');
    await t.locator('.usage').waitFor({ timeout: 1000 });
    return t;
  }
  /** axe-core's serious and critical violations on the page as it is. */
  async function axe(page: Page): Promise<string[]> {
    if ((await page.evaluate('typeof axe')) === 'undefined') await page.evaluate(AXE);
    return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`);
  }

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await ensureConsoleBuilt();
    f = await startInternFixture();
    id = await f.intern('md');
    browser = await launchChromium();
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await f?.close();
  });

  test('an answer is Markdown: emphasis, inline code, a highlighted code block in monospace that copies', async () => {
    const page = await open(DESKTOP);
    await page.goto(`${origin()}/#/interns/${id}`);
    const t = await turn(
      page,
      '/say **Done**: listed with `ls -l`.\n```sh\nls -l | sort # by name\n```\n/say - one\n/say - two',
    );
    const md = t.locator('.reply .md');
    assert.equal(await md.locator('strong').innerText(), 'Done');
    assert.equal(await md.locator('p code').innerText(), 'ls -l');
    assert.deepEqual(await md.locator('li').allInnerTexts(), ['one', 'two']);
    const block = md.locator('.code');
    assert.equal(await block.locator('.code-bar span').innerText(), 'sh');
    assert.equal(await block.locator('pre code').innerText(), 'ls -l | sort # by name');
    assert.equal(await block.locator('.hljs-built_in').first().innerText(), 'ls');
    assert.equal(await block.locator('.hljs-comment').innerText(), '# by name');
    assert.match(await block.locator('pre').evaluate((el) => getComputedStyle(el).fontFamily), /mono/i);
    await block.getByRole('button', { name: 'Copy code' }).click();
    await block.getByRole('button', { name: 'Copy code' }).getByText('Copied').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), 'ls -l | sort # by name');
    assert.deepEqual(await page.evaluate('window.violations'), []);
    await shot(page, 'markdown-desktop-light');
  });

  test('a script through an answer, a tool output or a name does not run, and shows as text', async () => {
    const hostile = await f.gw.call('POST', '/interns', {
      body: { name: `<img src=z onerror="document.title='pwned-name'">`, provision: true },
    });
    assert.equal(hostile.status, 201);
    await f.gw.ctx.interns.idle();
    const page = await open(DESKTOP);
    await page.goto(`${origin()}/#/interns/${hostile.body.id}`);
    await page.getByRole('heading', { level: 1, name: `<img src=z onerror="document.title='pwned-name'">` }).waitFor();
    // A paragraph with a javascript: link, raw inline HTML; an HTML block (a script); a line of raw HTML.
    const lines = [
      `[click me](javascript:document.title='pwned-link') <a href="javascript:alert(1)" onclick="alert(2)">raw</a>`,
      `inline <img src=x onerror="document.title='pwned-answer'">`,
      `<script>document.title='pwned-script'</script>`,
      '<iframe src="https://example.org"></iframe><style>body{display:none}</style>',
      // The scripted model says a tool's output back: `shell: <output>`.
      ...(noSandbox ? [] : [`/shell printf '%s' '<img src=y onerror=document.title=1>'`]),
    ];
    const t = await turn(page, lines.join('\n'));
    const reply = await t.locator('.reply').innerText();
    assert.ok(reply.includes(`<script>document.title='pwned-script'</script>`), reply);
    if (!noSandbox) assert.ok(reply.includes('shell: <img src=y onerror=document.title=1>'), reply);
    assert.equal(
      await t.locator('.reply p').first().innerText(),
      `click me <a href="javascript:alert(1)" onclick="alert(2)">raw</a> inline <img src=x onerror="document.title='pwned-answer'">`,
    );
    const injected = await page.evaluate(INJECTED);
    assert.deepEqual(injected, []);
    assert.equal(await page.title(), 'cohort console');
    assert.deepEqual(await page.evaluate('window.violations'), [], 'nothing the policy had to stop reached the page');
    await shot(page, 'injection-desktop-light');
  });

  test('the page follows a stream while at the bottom, stops when the reader scrolls up, and offers a jump', async (t) => {
    const page = await open(DESKTOP);
    // Closing the page ends the stream, whatever happens here: the next test needs the intern free.
    t.after(() => page.context().close());
    await page.goto(`${origin()}/#/interns/${id}`);
    const prompt = Array.from({ length: 80 }, () => '/repeat 30 word\n/sleep 60').join('\n');
    // A message sent while the session loads is not sent (the transcript is about to be replaced).
    await page.locator('section.chat[aria-busy="false"]').waitFor();
    await page.getByLabel('Message').fill(prompt);
    await page.keyboard.press('Enter');
    const transcript = page.locator('.transcript');
    const height = () => transcript.evaluate((el) => el.scrollHeight);
    // Followed: once the reply overflows, the transcript stays scrolled to its end as it grows. (A
    // turn's first words may take as long as turn() allows for a whole turn on a busy machine.)
    await page.waitForFunction(
      () => {
        const t = document.querySelector('.transcript')!;
        return t.scrollHeight > 2 * t.clientHeight;
      },
      undefined,
      { timeout: 60_000 },
    );
    // Scrolled at the frame after each growth.
    await page.waitForFunction(AT_BOTTOM, undefined, { timeout: 2000 });
    assert.equal(await page.getByRole('button', { name: /Jump to latest/ }).count(), 0);
    await transcript.hover();
    await page.mouse.wheel(0, -600);
    const jump = page.getByRole('button', { name: /Jump to latest/ });
    await jump.waitFor();
    const top = await transcript.evaluate((el) => el.scrollTop);
    const before = await height();
    await page.waitForFunction((h) => document.querySelector('.transcript')!.scrollHeight > h, before + 200);
    assert.equal(await transcript.evaluate((el) => el.scrollTop), top, 'the reader’s place is kept while text arrives');
    await shot(page, 'follow-stopped-desktop-light');
    await jump.click();
    await page.waitForFunction(AT_BOTTOM, undefined, { timeout: 2000 });
    await page.locator('article.turn').last().locator('.usage').waitFor({ timeout: 60_000 });
    assert.equal(await page.evaluate(AT_BOTTOM), true, 'followed again to the end of the turn');
    assert.equal(await jump.count(), 0);
  });

  test('a self-drive command shows as a block with its input, output and status', { skip: noSandbox }, async () => {
    const page = await open(DESKTOP);
    await page.goto(`${origin()}/#/interns/${id}`);
    const t = await turn(page, '/say Looking.\n/shell printf "a  b\\nccc d\\n"');
    const block = t.locator('details.tool');
    assert.equal(await block.count(), 1);
    assert.equal(await block.locator('summary').innerText(), 'shell\ndone\nprintf "a  b\\nccc d\\n"');
    assert.equal(await block.locator('pre.tool-output').isVisible(), false, 'folded until opened');
    await block.locator('summary').click();
    assert.equal(await block.locator('pre.tool-input').innerText(), 'printf "a  b\\nccc d\\n"');
    // Shell output keeps its columns: monospace, spaces as they are.
    assert.equal(await block.locator('pre.tool-output').innerText(), 'a  b\nccc d\n[exit 0]');
    assert.match(await block.locator('pre.tool-output').evaluate((el) => getComputedStyle(el).fontFamily), /mono/i);
    // The block sits between the words before it and the answer after it.
    assert.deepEqual(await t.locator('.reply > *').evaluateAll((els) => els.map((e) => e.className.split(' ')[0])), [
      'text',
      'tool',
      'text',
    ]);
    assert.deepEqual(await axe(page), []);
    await shot(page, 'tool-desktop-light');
  });

  test('an agent’s empty turn shows in the transcript as an error saying why (Claude Code given a "/" message)', {
    skip:
      noSandbox || (claudeCode ? false : 'Claude Code is an optional install (npm run install:agents); CI installs it'),
  }, async () => {
    const cc = await f.intern('cc', { agent: 'claude-code' });
    const page = await open(DESKTOP);
    await page.goto(`${origin()}/#/interns/${cc}`);
    await page.locator('section.chat[aria-busy="false"]').waitFor();
    await page.getByLabel('Message').fill('/foo bar');
    await page.keyboard.press('Enter');
    const t = page.getByRole('article', { name: 'Turn: /foo bar' });
    await t
      .and(page.locator('article.turn:not(.turn-streaming)'))
      .waitFor({ timeout: 90_000 })
      .catch(async (e) => {
        await shot(page, 'failed-empty-turn-never-ended');
        throw e;
      });
    assert.equal(await t.getAttribute('class'), 'turn turn-failed');
    const offered = '/debug, /compact, /context, /init, /pr-comments, /review, /security-review, /insights';
    assert.equal(
      await t.getByRole('alert').innerText(),
      `The intern could not run the turn. the message began with "/", so the agent took it as a command of its own, /foo, which it does not have (it offers ${offered}); nothing reached the model: to send the message to the model instead, begin it with a space`,
    );
    // Not retryable: the same words would be taken the same way.
    assert.equal(await t.getByRole('button', { name: 'Retry' }).count(), 0);
    assert.deepEqual(await axe(page), []);
    await shot(page, 'empty-turn-desktop-light');
  });

  test('the provider picker narrows as one types; the intern list and chat name the model, for any key', async () => {
    const { workspace_id } = (await f.gw.call('GET', `/interns/${id}`)).body;
    const patched = await f.gw.call('PATCH', `/workspaces/${workspace_id}`, {
      body: { default_text_model: 'local/scripted' },
    });
    assert.equal(patched.status, 200);
    const page = await open(DESKTOP);
    const row = page.locator('tr[data-intern="md"]');
    assert.equal(await row.locator('td[data-label="Model"]').innerText(), 'local/scripted (workspace default)');
    // An ordinary key, which cannot read workspaces, is told the model too, in the list and the chat.
    const ordinary = await open(DESKTOP, f.gw.keys.api_key);
    const its = ordinary.locator('tr[data-intern="md"] td[data-label="Model"]');
    assert.equal(await its.innerText(), 'local/scripted (workspace default)');
    await ordinary.goto(`${origin()}/#/interns/${id}`);
    assert.equal(await ordinary.locator('.chat-head code').innerText(), 'local/scripted');
    await page.getByRole('link', { name: 'Credentials' }).click();
    const provider = page.getByLabel('Provider', { exact: true });
    await provider
      .locator('option', { hasText: /^anthropic$/ })
      .waitFor({ state: 'attached' })
      .catch(async (e) => {
        await shot(page, 'failed-providers');
        throw e;
      });
    const all = await provider.locator('option').count();
    await page.getByLabel('Search providers').fill('anthro');
    assert.equal(await provider.inputValue(), 'anthropic', 'the first match is chosen');
    const narrowed = await provider.locator('option').allInnerTexts();
    assert.ok(narrowed.length < all && narrowed.every((o) => o.includes('anthro')), narrowed.join());
  });

  test('a long session opens at its latest turns; earlier ones come on demand, the reader’s place kept', async () => {
    const page = await open(DESKTOP);
    // The gateway's record of a session of 120 turns, the most recently used of the intern's.
    await seedSession(f.gw.ctx.store.db, {
      internId: id,
      sessionId: 'console-long',
      turns: Array.from({ length: 120 }, (_, i) => ({ prompt: `question ${i}`, answer: `answer **${i}**` })),
    });
    await page.goto(`${origin()}/#/interns/${id}`);
    await page.getByRole('article', { name: 'Turn: question 119' }).waitFor();
    assert.equal(await page.locator('article.turn').count(), 50);
    assert.equal(await page.locator('article.turn').first().getAttribute('aria-label'), 'Turn: question 70');
    await page.waitForFunction(AT_BOTTOM);
    const earlier = page.getByRole('button', { name: 'Show earlier turns (70 more)' });
    await earlier.scrollIntoViewIfNeeded();
    const anchor = page.getByRole('article', { name: 'Turn: question 70' });
    const y = (await anchor.boundingBox())!.y;
    await earlier.click();
    await page.getByRole('button', { name: 'Show earlier turns (20 more)' }).waitFor();
    assert.equal(await page.locator('article.turn').count(), 100);
    const moved = (await anchor.boundingBox())!.y - y;
    assert.ok(Math.abs(moved) < 2, `the turn read last stays where it was (moved ${moved} px)`);
  });

  test('history from a second browser: the gateway’s sessions in the drawer, each opening with its transcript', async () => {
    const first = await open(DESKTOP);
    await first.goto(`${origin()}/#/interns/${id}`);
    await first.locator('section.chat[aria-busy="false"]').waitFor();
    const nav = (page: Page) => page.getByRole('navigation', { name: 'Sessions' });
    await nav(first).getByRole('button', { name: 'New session' }).click();
    await turn(first, '/say kept **across** browsers');
    await nav(first).getByRole('button', { name: 'New session' }).click();
    await turn(first, '/say the latest one');
    // Each transcript is written as its request ends, just after the turn shows as done.
    const key = { authorization: `Bearer ${f.gw.keys.api_key}` };
    await waitFor('the transcript was written', async () => {
      const list = (await (await fetch(`${f.gw.url}/interns/${id}/sessions`, { headers: key })).json()) as any;
      return list.data[0]?.title === '/say the latest one' && list.data[0].state === 'completed';
    });

    // Another browser, which never saw these turns: it opens at the most recent session.
    const second = await open(DESKTOP);
    await second.goto(`${origin()}/#/interns/${id}`);
    const latest = second.getByRole('article', { name: 'Turn: /say the latest one' });
    await latest.waitFor();
    // A turn out of view is not laid out (content-visibility: auto), and its innerText is then
    // empty: it is read once in view, where the page scrolls it once laid out.
    await latest.scrollIntoViewIfNeeded();
    assert.equal(await latest.locator('.reply').innerText(), 'the latest one');
    assert.match(
      await latest.locator('.usage').innerText(),
      /^\d+ prompt \+ \d+ completion tokens, \$[\d.]+ · local\/scripted$/,
    );
    const listed = nav(second).getByRole('button', { name: '/say kept **across** browsers' });
    await listed.click();
    const older = second.getByRole('article', { name: 'Turn: /say kept **across** browsers' });
    await older.waitFor();
    assert.equal(await older.locator('.reply strong').innerText(), 'across');
    assert.equal(await listed.getAttribute('aria-current'), 'true');
    assert.equal(await second.locator('article.turn').count(), 1);
    await shot(second, 'history-second-browser');
    // It continues there: the next turn goes to the session it opened.
    await turn(second, '/say continued elsewhere');
    assert.equal(await second.locator('article.turn').count(), 2);
  });

  test('at 390 × 844 the transcript has at least half the height; screens and sessions open as drawers', async () => {
    const page = await open({ name: 'phone-dark', width: 390, height: 844, dark: true });
    const screens = page.getByRole('navigation', { name: 'Screens' });
    assert.equal(await screens.isVisible(), false);
    await page.getByRole('button', { name: 'Menu' }).click();
    assert.equal(await screens.isVisible(), true);
    assert.equal(
      await page.evaluate(() => document.activeElement?.textContent),
      'Interns',
      'focus moves into the menu',
    );
    await shot(page, 'menu-phone-dark');
    await page.keyboard.press('Escape');
    assert.equal(await screens.isVisible(), false);
    await page.waitForFunction(() => document.activeElement?.id === 'menu-toggle', undefined, { timeout: 2000 });
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.goto(`${origin()}/#/interns/${id}`);
    await turn(page, '/say **hello** from a phone\n```js\nconst answer = 42;\n```');
    assert.equal(await screens.isVisible(), false, 'navigating closed the menu');
    const box = await page.locator('.transcript').boundingBox();
    assert.ok(box && box.height >= 844 / 2, `the transcript is ${box?.height} px high`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'no sideways scrolling');
    const sessions = page.getByRole('navigation', { name: 'Sessions' });
    assert.equal(await sessions.isVisible(), false);
    await shot(page, 'chat-phone-dark');
    await page.getByRole('button', { name: /^Sessions/ }).click();
    assert.equal(await sessions.isVisible(), true);
    await page.waitForFunction(() => document.activeElement?.textContent === 'New session', undefined, {
      timeout: 2000,
    });
    await shot(page, 'sessions-phone-dark');
    await sessions.getByRole('button', { name: 'New session' }).click();
    assert.equal(await sessions.isVisible(), false, 'choosing a session closes the drawer');
  });

  test('axe-core finds no serious violation on any screen, at both sizes, light and dark', async () => {
    for (const view of VIEWS) {
      const page = await open(view);
      await page.evaluate('sessionStorage.removeItem("cohort.key")');
      await page.goto(`${origin()}/?key#/`);
      await page.getByLabel('API key').waitFor();
      assert.deepEqual(await axe(page), [], `${view.name}: key`);
      await shot(page, `key-${view.name}`);
      await page.getByLabel('API key').fill(f.gw.keys.management_key);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
      const chat = `interns/${id}`;
      const screens = [
        ['interns', 'interns'],
        [chat, 'chat'],
        [`${chat}/files`, 'files'],
        ['workspaces', 'workspaces'],
        ['presets', 'presets'],
        ['credentials', 'credentials'],
        ['keys', 'keys'],
        ['guardrails', 'guardrails'],
        ['usage', 'usage'],
      ];
      for (const [screen, name] of screens) {
        await page.goto(`${origin()}/#/${screen}`);
        await page.locator('h1').waitFor();
        await page.waitForLoadState('networkidle');
        // A screen is checked as its reader sees it once loaded (an intern's folder takes a command
        // in its runtime, longer than the network's idle half second).
        await page.waitForFunction(LOADED);
        if (screen === chat) {
          const t = await turn(page, '/say **Checked** with `axe`\n```ts\nconst ok: boolean = true;\n```');
          // Markdown and highlighted code in every view, not only the first.
          assert.equal(await t.locator('.reply .md strong').innerText(), 'Checked');
          assert.equal(await t.locator('.reply .code .hljs-keyword').first().innerText(), 'const');
        }
        assert.deepEqual(await axe(page), [], `${view.name}: ${screen}`);
        // The hostile intern's name (an earlier test) is on the interns screen: shown, never run.
        assert.deepEqual(await page.evaluate(INJECTED), [], `${view.name}: ${screen}`);
        assert.deepEqual(await page.evaluate('window.violations'), [], `${view.name}: ${screen}`);
        await shot(page, `${name}-${view.name}`);
      }
    }
  });
});
