// The console's keys and guardrails screens in a real browser (Debian's chromium driven by
// playwright-core) against a real gateway: a key made with a limit shows its secret once and then
// its spend against the limit, a bad limit is shown by its field, disable works; a guardrail is
// made and assigned to a key. Without /usr/bin/chromium it skips saying why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { launchChromium, noBrowser, unlabelledControls } from './helpers/browser.ts';
import { CONSOLE_DIR } from '../src/gateway/console.ts';
import { hashKey } from '../src/gateway/crypto/keys.ts';
import { waitFor } from './helpers/wait.ts';

if (noBrowser) process.stderr.write(`# console browser tests skipped: ${noBrowser}\n`);

describe('the console: keys and guardrails', { skip: noBrowser }, () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  const origin = () => gw.url.replace('/api/v1', '');
  before(async () => {
    if (!existsSync(join(CONSOLE_DIR, 'index.html'))) {
      // @ts-expect-error: a plain .mjs build script, without types
      const { buildConsole } = await import('../console/build.mjs');
      await buildConsole();
    }
    gw = await startTestGateway();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.setDefaultTimeout(15_000);
    await page.goto(origin() + '/');
    await page.getByLabel('API key').fill(gw.keys.management_key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  test('keys: made with a limit, its secret shown once, then its spend against the limit; disable', async () => {
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'Keys', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('ci');
    await page.getByLabel('Spending limit (USD)').fill('-1');
    await page.getByRole('button', { name: 'Create key' }).click();
    const limitField = page.getByLabel('Spending limit (USD)');
    await limitField.and(page.locator('[aria-invalid=true]')).waitFor();
    assert.equal(await page.locator('#f-key-limit-error').innerText(), 'Too small: expected number to be >=0');
    await limitField.fill('5');
    await page.getByLabel('Resets').selectOption('daily');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByRole('status').locator('code').innerText()).trim();
    assert.match(secret, /^ck-/);
    const hash = hashKey(secret);
    const row = page.getByRole('row').filter({ hasText: 'ci' });
    await row.getByText('$0.00 of $5.00 today').first().waitFor();
    // a model request with the key is spend the screen shows against its limit
    const res = await gw.call('POST', '/chat/completions', {
      key: secret,
      body: { model: 'local/scripted', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(res.status, 200);
    await gw.ctx.inference.flush();
    const spent = (await gw.call('GET', `/keys/${hash}`)).body.data;
    await page.reload();
    await page.getByRole('heading', { name: 'Keys', level: 1 }).waitFor();
    const cost = spent.usage_daily as number;
    assert.ok(cost > 0);
    await page
      .getByRole('row')
      .filter({ hasText: 'ci' })
      .getByText(`$${cost.toFixed(4)} of $5.00 today`)
      .first()
      .waitFor();
    const meter = Number(await page.getByRole('meter', { name: 'ci spend' }).getAttribute('value'));
    assert.ok(Math.abs(meter - cost) < 1e-12, `meter ${meter}, spent ${cost}`);
    assert.deepEqual(await unlabelledControls(page), []);
    await page.getByRole('button', { name: 'Disable ci' }).click();
    await page.getByRole('button', { name: 'Enable ci' }).waitFor();
    assert.equal((await gw.call('GET', '/key', { key: secret })).status, 401);
  });

  test('guardrails: made with a limit and allowed models, assigned to a key', async () => {
    await page.getByRole('link', { name: 'Guardrails' }).click();
    await page.getByRole('heading', { name: 'Guardrails', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('team');
    await page.getByLabel('Spending limit (USD)').fill('2');
    await page.getByLabel('Resets').selectOption('monthly');
    await page.getByLabel('Allowed models').fill('local/scripted, openai/gpt-4o');
    await page.getByRole('button', { name: 'Create guardrail' }).click();
    const row = page.getByRole('row').filter({ hasText: 'team' });
    await row.getByText('$2.00, resets monthly').waitFor();
    await row.getByText('models: local/scripted, openai/gpt-4o').waitFor();
    await page.getByLabel('Key for team').selectOption({ label: 'bootstrap key' });
    assert.deepEqual(await unlabelledControls(page), []);
    await page.getByRole('button', { name: 'Assign to team' }).click();
    const g = (await gw.call('GET', '/guardrails')).body.data[0];
    const assigned = await waitFor('the console assigned the key', async () => {
      const r = (await gw.call('GET', `/guardrails/${g.id}/assignments/keys`)).body;
      return r.total_count === 1 ? r.data : null;
    });
    assert.deepEqual(
      assigned.map((a: { key_hash: string }) => a.key_hash),
      [hashKey(gw.keys.api_key)],
    );
  });
});
