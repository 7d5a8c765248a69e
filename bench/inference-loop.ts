// The server-tool loop's own cost (`BENCH_SECTIONS=loop npm run bench:inference`, or this file
// alone): a two-step loop with service:datetime through cohort against the same two upstream
// calls made by the client through the raw node:http proxy, and through cohort as two plain
// requests (the client running the tool itself). The upstream answers at once: a datetime call
// to a request without a tool result, text to one with it. One connection, requests in turn,
// the three sides alternating in rounds; medians (p50) and p90 in ms. The loop's own overhead per
// step is (loop − two plain cohort requests) ÷ 2; the target is under 1 ms.
// Run as `node --import tsx bench/inference-loop.ts` (or `… upstream PORT` for the upstream).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { BUILT_MAIN, ensureBuilt } from '../test/helpers/gateway-process.ts';

const ROUNDS = Number(process.env.BENCH_LOOP_ROUNDS ?? 20);
const PER_ROUND = Number(process.env.BENCH_LOOP_PER_ROUND ?? 50);

const usage = { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 };
const answer = (message: object, finish: string) =>
  Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-loop',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    }),
  );
const CALL = { id: 'call_bench_1', type: 'function', function: { name: 'datetime', arguments: '{}' } };
const TOOL_CALL = answer({ role: 'assistant', content: null, tool_calls: [CALL] }, 'tool_calls');
const TEXT = answer({ role: 'assistant', content: 'It is later than you think.' }, 'stop');

function upstream(port: number) {
  createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const out = body.includes('"role":"tool"') ? TEXT : TOOL_CALL;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': out.length });
      res.end(out);
    });
  }).listen(port, '127.0.0.1');
}

async function freePort(): Promise<number> {
  const s = netServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function until(ok: () => Promise<boolean> | boolean, what: string) {
  for (let i = 0; i < 1200; i++) {
    if (await Promise.resolve(ok()).catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what} did not start`);
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

export async function loopSection(): Promise<void> {
  const children: ChildProcess[] = [];
  const start = (args: string[], env: Record<string, string> = {}) => {
    const env0 = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|REDIS_URL|COHORT_)/.test(k)),
    );
    const c = spawn(process.execPath, args, { env: { ...env0, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(c);
    return c;
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-loop-'));
  try {
    const [upPort, proxyPort, cohortPort] = await Promise.all([freePort(), freePort(), freePort()]);
    start(['--import', 'tsx', fileURLToPath(import.meta.url), 'upstream', String(upPort)]);
    start(['--import', 'tsx', 'bench/inference-servers.ts', 'proxy', String(proxyPort), String(upPort)]);
    start([BUILT_MAIN], {
      PORT: String(cohortPort),
      COHORT_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      COHORT_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${upPort}/v1`,
      COHORT_PROVIDER_OPENAI_API_KEY: 'sk-bench-shared',
    });
    await until(() => existsSync(join(dataDir, 'bootstrap.json')), 'cohort');
    const key = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).api_key as string;
    const proxy = new Pool(`http://127.0.0.1:${proxyPort}`, { connections: 1 });
    const cohort = new Pool(`http://127.0.0.1:${cohortPort}`, { connections: 1 });
    const post = async (pool: Pool, path: string, auth: string, body: object) => {
      const res = await pool.request({
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: auth },
        body: JSON.stringify(body),
      });
      const out = (await res.body.json()) as { choices: { message: { content: string | null } }[] };
      if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(out)}`);
      return out;
    };
    const user = { role: 'user', content: 'What time is it?' };
    const toolMsg = { role: 'tool', tool_call_id: CALL.id, content: '{"datetime":"2026-11-27T12:00:00+00:00"}' };
    const fn = { type: 'function', function: { name: 'datetime', parameters: { type: 'object' } } };
    /** The client doing both calls itself, through a gateway at `path`. */
    const pair = async (pool: Pool, path: string, auth: string, model: string) => {
      await post(pool, path, auth, { model, messages: [user], tools: [fn] });
      await post(pool, path, auth, {
        model,
        messages: [user, { role: 'assistant', content: null, tool_calls: [CALL] }, toolMsg],
        tools: [fn],
      });
    };
    const sides: Record<string, () => Promise<unknown>> = {
      'raw proxy, two calls': () => pair(proxy, '/v1/chat/completions', 'Bearer sk-bench', 'gpt-4o-mini'),
      'cohort, two plain requests': () =>
        pair(cohort, '/api/v1/chat/completions', `Bearer ${key}`, 'openai/gpt-4o-mini'),
      'cohort, one request with the loop': async () => {
        const r = await post(cohort, '/api/v1/chat/completions', `Bearer ${key}`, {
          model: 'openai/gpt-4o-mini',
          messages: [user],
          tools: [{ type: 'service:datetime' }],
        });
        if (r.choices[0]!.message.content !== 'It is later than you think.') throw new Error('the loop did not answer');
      },
    };
    await until(async () => (await sides['cohort, one request with the loop']!(), true), 'cohort');
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
    for (let round = 0; round < ROUNDS + 2; round++) {
      for (const [name, run] of Object.entries(sides)) {
        for (let i = 0; i < PER_ROUND; i++) {
          const t0 = performance.now();
          await run();
          // The first two rounds warm up.
          if (round >= 2) times[name]!.push(performance.now() - t0);
        }
      }
    }
    await proxy.close();
    await cohort.close();
    console.log(
      `\nThe server-tool loop: a two-step datetime loop, ${ROUNDS * PER_ROUND} requests per side over one connection (ms)\n`,
    );
    console.log('| side | p50 | p90 |');
    console.log('|---|---:|---:|');
    for (const [name, xs] of Object.entries(times))
      console.log(`| ${name} | ${pct(xs, 0.5).toFixed(3)} | ${pct(xs, 0.9).toFixed(3)} |`);
    const p50 = (k: string) => pct(times[k]!, 0.5);
    const own = (p50('cohort, one request with the loop') - p50('cohort, two plain requests')) / 2;
    const overRaw = (p50('cohort, one request with the loop') - p50('raw proxy, two calls')) / 2;
    console.log(
      `\nThe loop's own overhead per step at p50: ${own.toFixed(3)} ms (target < 1 ms: ${own < 1 ? 'met' : 'NOT met'}); per step over the raw proxy doing the same calls: ${overRaw.toFixed(3)} ms.`,
    );
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === 'upstream') upstream(Number(process.argv[3]));
  else {
    ensureBuilt();
    await loopSection();
  }
}
