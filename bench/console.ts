// `npm run bench:console`: (1) what the console's first load weighs over the wire, gzip and brotli,
// from the files the gateway serves (dist/console/); (2) how long a streamed chunk takes to reach
// the screen: a real gateway, a real intern, the scripted model's long `/repeat` turn, the console
// in Debian's chromium. In the page, each network read of the chat response is timed as it
// arrives (a pass-through stream wrapped round the response body), and each change the console
// then makes to the page is timed at the frame that shows it (requestAnimationFrame, then a task
// queued from it, which runs once that frame is painted). Each read's latency is arrival → first
// painted frame after the console's next change (and, to tell script from layout and paint,
// arrival → that change). Two turn shapes: a paced stream (150 bursts of
// 20 chunks, 20 ms apart: tokens as a fast model sends them) and 20000 chunks as fast as the
// relay writes them (reads carry thousands each), as one 100 KB line and as 100 lines. Prints a
// markdown table; BENCH_TURNS (3) turns of each, medians over every read of every turn.
// (3) The first screen: from navigation to the Interns screen's heading in the page (a stored key,
// so the key's probe is included), BENCH_LOADS (5) loads. (4) Frame time while a turn streams into
// a session of 2,000 messages (1,000 earlier turns, some with code blocks, in the gateway's record
// of the intern's sessions, which the console opens): the gaps between animation frames, median / p95 / max.
// BENCH_ONLY=first,frames,latency picks which run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startInternFixture } from '../test/helpers/interns.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { seedSession } from '../test/helpers/sessions.ts';
import { CONSOLE_DIR } from '../src/gateway/console.ts';

const TURNS = Number(process.env.BENCH_TURNS ?? 3);
const LOADS = Number(process.env.BENCH_LOADS ?? 5);
const ONLY = new Set((process.env.BENCH_ONLY ?? 'first,frames,latency').split(','));
const SHAPES = {
  'paced, /repeat 20 word + /sleep 20, ×150': Array.from({ length: 150 }, () => '/repeat 20 word\n/sleep 20').join(
    '\n',
  ),
  'burst, /repeat 20000 word (one 100 KB line)': '/repeat 20000 word',
  'burst, /repeat 200 word ×100 (100 lines)': Array.from({ length: 100 }, () => '/repeat 200 word').join('\n'),
};

function firstLoadBytes() {
  const page = readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8');
  const files = ['index.html', ...[...page.matchAll(/"\/(assets\/[^"]+)"/g)].map((m) => m[1]!)];
  const size = (suffix: string) =>
    files.reduce((sum, f) => sum + readFileSync(join(CONSOLE_DIR, f + suffix)).length, 0);
  return { files: files.length, raw: size(''), gzip: size('.gz'), brotli: size('.br') };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

// Runs in the page before the console loads: times each read of a chat stream and each painted change.
const INSTRUMENT = () => {
  const w = window as unknown as { arrivals: number[]; paints: { changed: number; painted: number }[] };
  w.arrivals = [];
  w.paints = [];
  const original = window.fetch;
  window.fetch = async (...args) => {
    const res = await original(...args);
    if (!String(args[0]).endsWith('/chat/completions') || !res.body) return res;
    const reader = res.body.getReader();
    const timed = new ReadableStream({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        w.arrivals.push(performance.now());
        controller.enqueue(value);
      },
    });
    return new Response(timed, { status: res.status, headers: res.headers });
  };
  const channel = new MessageChannel();
  let pending: number[] = [];
  channel.port1.onmessage = () => {
    const painted = performance.now();
    for (const changed of pending) w.paints.push({ changed, painted });
    pending = [];
  };
  new MutationObserver(() => {
    if (!pending.length) requestAnimationFrame(() => channel.port2.postMessage(0));
    pending.push(performance.now());
  }).observe(document, { subtree: true, childList: true, characterData: true });
};

async function latency(prompt: string) {
  const f = await startInternFixture();
  const browser = await launchChromium();
  try {
    const id = await f.intern('bench');
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await page.addInitScript(INSTRUMENT);
    await page.goto(f.gw.url.replace('/api/v1', '/'));
    await page.getByLabel('API key').fill(f.gw.keys.api_key);
    await page.keyboard.press('Enter');
    await page.goto(f.gw.url.replace('/api/v1', `/#/interns/${id}`));
    const all: number[] = [];
    const applied: number[] = [];
    let reads = 0;
    for (let turn = 0; turn < TURNS; turn++) {
      await page.evaluate(() => {
        const w = window as unknown as { arrivals: number[]; paints: unknown[] };
        w.arrivals = [];
        w.paints = [];
      });
      await page.getByLabel('Message').fill(prompt);
      await page.keyboard.press('Enter');
      await page.locator('article.turn').nth(turn).locator('.usage').waitFor({ timeout: 120_000 });
      const { arrivals, paints } = await page.evaluate(() => {
        const w = window as unknown as { arrivals: number[]; paints: { changed: number; painted: number }[] };
        return { arrivals: w.arrivals, paints: w.paints };
      });
      reads += arrivals.length;
      for (const a of arrivals) {
        const shown = paints.find((p) => p.changed >= a);
        if (!shown) continue;
        all.push(shown.painted - a);
        applied.push(shown.changed - a);
      }
    }
    return {
      reads,
      median: quantile(all, 0.5),
      p95: quantile(all, 0.95),
      max: Math.max(...all),
      applied: quantile(applied, 0.5),
    };
  } finally {
    await browser.close();
    await f.close();
  }
}

/** Logs in, returns the fixture, browser, page and a running intern's id. */
async function session(
  f: Awaited<ReturnType<typeof startInternFixture>>,
  browser: Awaited<ReturnType<typeof launchChromium>>,
) {
  const id = await f.intern('bench');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(f.gw.url.replace('/api/v1', '/'));
  await page.getByLabel('API key').fill(f.gw.keys.api_key);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor();
  return { id, page };
}

// Runs in the page before the console loads: the time the first screen's heading appears.
const FIRST_HEADING = () => {
  const w = window as unknown as { shown?: number };
  new MutationObserver((_, o) => {
    if (document.getElementById('page-title')) {
      w.shown = performance.now();
      o.disconnect();
    }
  }).observe(document, { subtree: true, childList: true });
};

async function firstScreen() {
  const f = await startInternFixture();
  const browser = await launchChromium();
  try {
    const { page } = await session(f, browser);
    await page.addInitScript(FIRST_HEADING);
    const times: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      await page.goto(f.gw.url.replace('/api/v1', `/?load=${i}#/interns`));
      await page.waitForFunction(() => (window as unknown as { shown?: number }).shown !== undefined);
      times.push(await page.evaluate(() => (window as unknown as { shown: number }).shown));
    }
    return { median: quantile(times, 0.5), max: Math.max(...times) };
  } finally {
    await browser.close();
    await f.close();
  }
}

/** 1,000 earlier turns (2,000 messages): prose, a list, and every fifth a fenced code block. */
function longSession() {
  return Array.from({ length: 1000 }, (_, i) => ({
    prompt: `question ${i}`,
    answer:
      `Turn **${i}** done. The files:\n\n- \`src/a${i}.ts\`\n- \`src/b${i}.ts\`\n\n` +
      (i % 5 === 0
        ? '```ts\nexport const x' + i + ' = (a: number) => a * 2; // doubled\n```\n'
        : 'Nothing else to report.'),
  }));
}

async function frames() {
  const f = await startInternFixture();
  const browser = await launchChromium();
  try {
    const { id, page } = await session(f, browser);
    await seedSession(f.gw.ctx.store.db, { internId: id, sessionId: 'console-bench-long', turns: longSession() });
    const opening = performance.now();
    await page.goto(f.gw.url.replace('/api/v1', `/#/interns/${id}`));
    await page.getByRole('article', { name: 'Turn: question 999' }).waitFor();
    const opened = performance.now() - opening;
    const prompt = Array.from({ length: 60 }, () => '/repeat 20 word\n/sleep 20').join('\n');
    // A string: the bench's compiler would name the inner function with a helper the page lacks.
    await page.evaluate(`(() => {
      window.gaps = [];
      window.stop = false;
      let last = performance.now();
      const tick = (t) => {
        window.gaps.push(t - last);
        last = t;
        if (!window.stop) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    })()`);
    await page.getByLabel('Message').fill(prompt);
    // Frames before this point are the composer taking a 120-line paste (Chromium's text insertion,
    // reported apart); what the target speaks of starts with the send.
    const filling = await page.evaluate(`new Promise((done) =>
      requestAnimationFrame(() => requestAnimationFrame(() => done(Math.max(0, ...window.gaps.splice(0).slice(1))))))`);
    await page.keyboard.press('Enter');
    await page.locator('article.turn').last().locator('.usage').waitFor({ timeout: 120_000 });
    const gaps = await page.evaluate(() => {
      const w = window as unknown as { gaps: number[]; stop: boolean };
      w.stop = true;
      return w.gaps;
    });
    return {
      opened,
      filling: filling as number,
      frames: gaps.length,
      median: quantile(gaps, 0.5),
      p95: quantile(gaps, 0.95),
      max: Math.max(...gaps),
    };
  } finally {
    await browser.close();
    await f.close();
  }
}

const load = firstLoadBytes();
const kb = (n: number) => (n / 1024).toFixed(1);
console.log(`| measure | value |\n| --- | --- |`);
console.log(
  `| first load, ${load.files} files: raw / gzip / brotli, KB | ${kb(load.raw)} / ${kb(load.gzip)} / ${kb(load.brotli)} |`,
);
if (ONLY.has('first')) {
  const s = await firstScreen();
  console.log(
    `| first screen (navigation → Interns heading), ms, median / max of ${LOADS} | ${s.median.toFixed(0)} / ${s.max.toFixed(0)} |`,
  );
}
if (ONLY.has('frames')) {
  const fr = await frames();
  console.log(
    `| opening a 2,000-message session (navigation → its last turn in the page), ms | ${fr.opened.toFixed(0)} |`,
  );
  console.log(
    `| frame time while streaming into a 2,000-message session, ms, median / p95 / max (${fr.frames} frames) | ${fr.median.toFixed(1)} / ${fr.p95.toFixed(1)} / ${fr.max.toFixed(1)} |`,
  );
  console.log(
    `| the longest frame while the composer takes the 120-line prompt (before the send), ms | ${fr.filling.toFixed(1)} |`,
  );
}
for (const [shape, prompt] of ONLY.has('latency') ? Object.entries(SHAPES) : []) {
  const l = await latency(prompt);
  console.log(
    `| read → painted, ms, median / p95 / max: ${shape} (${l.reads} reads, ${TURNS} turns) | ${l.median.toFixed(1)} / ${l.p95.toFixed(1)} / ${l.max.toFixed(1)} |`,
  );
  console.log(
    `| read → page changed (parsing and rendering, before layout and paint), ms, median: ${shape} | ${l.applied.toFixed(1)} |`,
  );
}
