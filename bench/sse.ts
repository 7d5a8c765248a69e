// The SSE hot path in one process, old against new, interleaved (A, B, A, B…) and reported as
// medians of µs per event: decoding an upstream model stream (the lean hand-written decoder the
// gateway had until issue 33, read from git, against src/shared/sse/read.ts on eventsource-parser), and
// framing an intern stream's text chunks (src/gateway/http/sse-frames.ts's chunkEncoder against
// JSON.stringify). The old decoder is read from git at OLD (default: the last commit that had
// it), so the comparison can be repeated. Run as `node --import tsx bench/sse.ts [ROUNDS]`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SseDecoder } from '../src/shared/sse/read.ts';
import { dataFrame } from '../src/shared/sse/write.ts';
import { chunkEncoder } from '../src/gateway/http/sse-frames.ts';
import type { ChatChunk } from '../src/shared/openai.ts';

const OLD = process.env.OLD ?? '8d292fd';
const ROUNDS = Number(process.argv[2] ?? 15);

type Decoder = { feed(b: Buffer): void };
const dir = mkdtempSync(join(tmpdir(), 'bench-sse-'));
writeFileSync(
  join(dir, 'old.ts'),
  execFileSync('git', ['show', `${OLD}:src/shared/http/sse-decoder.ts`], { encoding: 'utf8' }),
);
const { SseDecoder: OldDecoder } = (await import(join(dir, 'old.ts'))) as {
  SseDecoder: new (onData: (d: string) => void) => Decoder;
};
rmSync(dir, { recursive: true });

/** A provider's stream as it arrives: content deltas of ~`text` characters, `perRead` events to a network read. */
function reads(o: { events: number; perRead: number; text: number }): Buffer[] {
  const frame = (i: number) =>
    dataFrame({
      id: 'chatcmpl-AbCdEf0123456789',
      object: 'chat.completion.chunk',
      created: 1764250000,
      model: 'gpt-4o-mini-2024-07-18',
      system_fingerprint: 'fp_0123456789',
      choices: [
        { index: 0, delta: { content: `é${'x'.repeat(o.text - 2)}${i % 10}` }, logprobs: null, finish_reason: null },
      ],
    });
  const out: Buffer[] = [];
  for (let i = 0; i < o.events; i += o.perRead) {
    let s = '';
    for (let j = i; j < Math.min(o.events, i + o.perRead); j++) s += frame(j);
    out.push(Buffer.from(s));
  }
  return out;
}

/** µs per event for one pass of `bufs` through a fresh decoder. */
function decodePass(make: (onData: (d: string) => void) => Decoder, bufs: Buffer[], events: number): number {
  let n = 0;
  const d = make((data) => {
    n += data.length > 0 ? 1 : 0;
  });
  const t = performance.now();
  for (const b of bufs) d.feed(b);
  const us = ((performance.now() - t) * 1000) / events;
  if (n !== events) throw new Error(`decoded ${n} of ${events} events`);
  return us;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const fmt = (x: number) => x.toFixed(3);

const rows: string[] = [];
const EVENTS = 20_000;
for (const [perRead, text] of [
  [1, 8],
  [4, 8],
  [16, 8],
  [1, 200],
  [16, 200],
] as const) {
  const bufs = reads({ events: EVENTS, perRead, text });
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    a.push(decodePass((f) => new OldDecoder(f), bufs, EVENTS));
    b.push(decodePass((f) => new SseDecoder(f), bufs, EVENTS));
  }
  // The first rounds warm both up; the medians are of all.
  rows.push(
    `| decode, ${perRead} event(s) a read, ${text}-char deltas | ${fmt(median(a))} | ${fmt(median(b))} | ${(median(b) / median(a)).toFixed(2)} |`,
  );
}

/** µs per chunk framing an intern stream's text deltas. */
function framePass(encode: (c: ChatChunk) => string, chunks: ChatChunk[]): number {
  let bytes = 0;
  const t = performance.now();
  for (const c of chunks) bytes += encode(c).length;
  const us = ((performance.now() - t) * 1000) / chunks.length;
  if (bytes === 0) throw new Error('nothing framed');
  return us;
}
const chunks: ChatChunk[] = Array.from({ length: EVENTS }, (_, i) => ({
  id: 'chatcmpl-0123456789abcdef',
  object: 'chat.completion.chunk',
  created: 1764250000,
  model: 'service/intern',
  choices: [{ index: 0, delta: { content: `token ${i}` }, finish_reason: null }],
}));
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(framePass(chunkEncoder(), chunks));
  b.push(framePass((c) => dataFrame(c), chunks));
}
rows.push(
  `| frame an intern text chunk: chunkEncoder (A) vs JSON.stringify (B) | ${fmt(median(a))} | ${fmt(median(b))} | ${(median(b) / median(a)).toFixed(2)} |`,
);

console.log(`| what (${ROUNDS} interleaved rounds of ${EVENTS} events) | A: old µs/event | B: new µs/event | B/A |`);
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(r);
