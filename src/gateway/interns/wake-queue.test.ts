// The wake queue: admission table by table, round-robin between accounts, a leaving caller, and
// the limits on concurrent starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, createWakeQueue, FairLines, retryAfterSeconds, WakeRefused, type Admission } from './wake-queue.ts';

const L = { concurrency: 2, maxQueued: 4, maxQueuedPerAccount: 2 };
const admissions: [string, { running: number; queued: number; accountQueued: number }, Admission][] = [
  ['a free slot and nobody waiting', { running: 1, queued: 0, accountQueued: 0 }, 'ok'],
  ['slots taken, room in the queue', { running: 2, queued: 1, accountQueued: 0 }, 'ok'],
  ['slots taken, queue full', { running: 2, queued: 4, accountQueued: 0 }, 'queue_full'],
  ['slots taken, this account has its share waiting', { running: 2, queued: 2, accountQueued: 2 }, 'account_full'],
  ['a free slot but others wait first: queued behind them', { running: 1, queued: 1, accountQueued: 0 }, 'ok'],
  ['a free slot and nobody waiting, even for a busy account', { running: 0, queued: 0, accountQueued: 0 }, 'ok'],
];
for (const [name, o, want] of admissions) test(`admit: ${name} → ${want}`, () => assert.equal(admit(L, o), want));

test('retry-after: at least a second, growing with the queue ahead', () => {
  assert.equal(retryAfterSeconds({ queued: 0, concurrency: 2, startMs: 100 }), 1);
  assert.equal(retryAfterSeconds({ queued: 8, concurrency: 2, startMs: 1_000 }), 5);
});

test('lines: accounts are served in turn, each in its own order', () => {
  const l = new FairLines<string>();
  for (const x of ['a1', 'a2', 'a3']) l.push('a', x);
  l.push('b', 'b1');
  l.push('c', 'c1');
  l.push('b', 'b2');
  const order: string[] = [];
  for (let x = l.shift(); x; x = l.shift()) order.push(x);
  assert.deepEqual(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  assert.equal(l.size, 0);
});

test('lines: a removed item is not served, and an emptied line goes', () => {
  const l = new FairLines<string>();
  l.push('a', 'a1');
  l.push('b', 'b1');
  assert.equal(l.remove('a', 'a1'), true);
  assert.equal(l.remove('a', 'a1'), false);
  assert.equal(l.waiting('a'), 0);
  assert.equal(l.shift(), 'b1');
  assert.equal(l.shift(), undefined);
});

function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
}

test('queue: at most `concurrency` starts at once; one account waking many cannot hold back another', async () => {
  const q = createWakeQueue(L);
  const g = gate();
  const started: string[] = [];
  const job = (name: string) => async () => {
    started.push(name);
    await g.p;
    return name;
  };
  const all = [
    q.run('greedy', job('g1')),
    q.run('greedy', job('g2')),
    q.run('greedy', job('g3')),
    q.run('greedy', job('g4')),
  ];
  // The greedy account has two starting and its share (two) waiting: a fifth is refused, another account is not.
  await assert.rejects(
    q.run('greedy', job('g5')),
    (e: unknown) => e instanceof WakeRefused && e.why === 'account_full' && e.retryAfterS >= 1,
  );
  all.push(q.run('other', job('o1')));
  assert.deepEqual(started, ['g1', 'g2']);
  assert.deepEqual(q.stats(), { running: 2, queued: 3 });
  g.open();
  assert.deepEqual(await Promise.all(all), ['g1', 'g2', 'g3', 'g4', 'o1']);
  // The other account's wake was served before the greedy account's second waiting one.
  assert.deepEqual(started, ['g1', 'g2', 'g3', 'o1', 'g4']);
  assert.deepEqual(q.stats(), { running: 0, queued: 0 });
});

test('queue: full over all accounts is refused queue_full', async () => {
  const q = createWakeQueue({ concurrency: 1, maxQueued: 2, maxQueuedPerAccount: 2 });
  const g = gate();
  const runs = ['a', 'b', 'c'].map((acc) => q.run(acc, () => g.p));
  await assert.rejects(
    q.run('d', () => g.p),
    (e: unknown) => e instanceof WakeRefused && e.why === 'queue_full',
  );
  g.open();
  await Promise.all(runs);
});

test('queue: a caller that leaves while waiting is taken out of the line; a failed start frees its slot', async () => {
  const q = createWakeQueue({ concurrency: 1, maxQueued: 4, maxQueuedPerAccount: 4 });
  const g = gate();
  const first = q.run('a', async () => {
    await g.p;
    throw new Error('start failed');
  });
  const ac = new AbortController();
  let ran = false;
  const left = q.run('a', async () => void (ran = true), ac.signal);
  ac.abort(new Error('client left'));
  await assert.rejects(left, /client left/);
  assert.deepEqual(q.stats(), { running: 1, queued: 0 });
  g.open();
  await assert.rejects(first, /start failed/);
  assert.equal(await q.run('a', async () => 'next'), 'next');
  assert.equal(ran, false);
});
