// Debian's chromium driven by playwright-core (which never downloads a browser of its own), for
// the console's browser tests and its bench; `noBrowser` says why they skip where it is missing.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const noBrowser: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (apt-get install chromium; .ci/run does)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The visible controls on the page that have no name a screen reader can say (a label, an
 * aria-label, or a button's text), as their HTML: a screen passes with none. */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button, meter')]
      .filter((el) => (el as HTMLElement).offsetParent !== null)
      .filter(
        (el) =>
          !(
            (el as HTMLInputElement).labels?.length ||
            el.getAttribute('aria-label') ||
            (el.tagName === 'BUTTON' && el.textContent?.trim())
          ),
      )
      .map((el) => el.outerHTML),
  );
}
