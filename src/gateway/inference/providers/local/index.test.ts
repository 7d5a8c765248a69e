// The local adapter: a cancelled call stops the scripted model's /sleep, before any output and mid-stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { localAdapter } from './index.ts';
import { Cancel, type UpstreamCall } from '../../types.ts';

const call = (content: string, cancel: Cancel): UpstreamCall => ({
  model: 'scripted',
  body: { messages: [{ role: 'user', content }] },
  baseUrl: '',
  apiKey: null,
  cancel,
});
const isAbort = (e: unknown) => e instanceof Error && e.name === 'AbortError';

test('a cancellation stops a completion in its sleep', async () => {
  const cancel = new Cancel();
  const pending = localAdapter.complete(call('/sleep 60000\n/say never', cancel));
  setTimeout(() => cancel.cancel(), 10);
  await assert.rejects(pending, isAbort);
});

test('a cancellation stops a stream in its sleep, after the chunks before it', async () => {
  const cancel = new Cancel();
  const it = (await localAdapter.stream(call('/say first\n/sleep 60000\n/say never', cancel)))[Symbol.asyncIterator]();
  const content: unknown[] = [];
  for (let i = 0; i < 2; i++) content.push((await it.next()).value?.[0]?.choices[0]?.delta.content);
  assert.deepEqual(content, ['', 'first']);
  const next = it.next();
  setTimeout(() => cancel.cancel(), 10);
  await assert.rejects(next, isAbort);
});

test('a call cancelled before it starts sleeping never sleeps', async () => {
  const cancel = new Cancel();
  cancel.cancel();
  await assert.rejects(localAdapter.complete(call('/sleep 60000', cancel)), isAbort);
});
