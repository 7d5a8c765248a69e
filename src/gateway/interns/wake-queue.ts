// The wake queue (docs/fleet.md): a burst of chats to sleeping interns starts their daemons a few
// at a time, so the machine is not overloaded and every start gets the CPU it needs to finish
// quickly; beyond a bounded number waiting, a chat is refused `503 busy` with Retry-After.
// Fair between accounts: each account waits in its own line and the lines are served in turn,
// and one account may fill at most a share of the queue, so a tenant waking many interns at once
// cannot starve the others.

/** The waiting lines, by account, served round-robin. Pure data: no timers, no promises. */
export class FairLines<T> {
  /** Insertion order is the turn order: an account served goes to the back. */
  private readonly lines = new Map<string, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  waiting(account: string): number {
    return this.lines.get(account)?.length ?? 0;
  }

  push(account: string, item: T): void {
    const line = this.lines.get(account);
    if (line) line.push(item);
    else this.lines.set(account, [item]);
    this.count++;
  }

  /** The first item of the account whose turn it is; that account moves to the back. */
  shift(): T | undefined {
    const first = this.lines.entries().next();
    if (first.done) return undefined;
    const [account, line] = first.value;
    const item = line.shift()!;
    this.lines.delete(account);
    if (line.length) this.lines.set(account, line);
    this.count--;
    return item;
  }

  remove(account: string, item: T): boolean {
    const line = this.lines.get(account);
    const i = line?.indexOf(item) ?? -1;
    if (!line || i < 0) return false;
    line.splice(i, 1);
    if (!line.length) this.lines.delete(account);
    this.count--;
    return true;
  }
}

export type WakeLimits = {
  /** Daemon starts under way at once. */
  concurrency: number;
  /** Wakes waiting for a start, over all accounts. */
  maxQueued: number;
  /** Wakes one account may have waiting. */
  maxQueuedPerAccount: number;
};

/** Why a wake was not queued. */
export type Admission = 'ok' | 'queue_full' | 'account_full';

/** Whether one more wake of `account` may wait (pure). */
export function admit(l: WakeLimits, o: { running: number; queued: number; accountQueued: number }): Admission {
  // A free start slot takes it at once: nothing waits.
  if (o.running < l.concurrency && o.queued === 0) return 'ok';
  if (o.queued >= l.maxQueued) return 'queue_full';
  if (o.accountQueued >= l.maxQueuedPerAccount) return 'account_full';
  return 'ok';
}

/** Seconds a refused caller should wait: the queue ahead of it drained at the recent start time. */
export function retryAfterSeconds(o: { queued: number; concurrency: number; startMs: number }): number {
  return Math.max(1, Math.ceil(((o.queued / o.concurrency + 1) * o.startMs) / 1000));
}

export class WakeRefused extends Error {
  constructor(
    readonly why: Exclude<Admission, 'ok'>,
    readonly retryAfterS: number,
  ) {
    super(
      why === 'queue_full'
        ? 'too many interns are waking up on this machine'
        : 'this account has too many interns waking up at once',
    );
  }
}

type Job = { run: () => void };

export type WakeQueue = {
  /** Runs `start` when a slot is free, in the account's turn; rejects with WakeRefused beyond the
   * limits, or with the signal's reason if the caller leaves while it waits. */
  run<T>(account: string, start: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  stats(): { running: number; queued: number };
};

export function createWakeQueue(limits: WakeLimits): WakeQueue {
  const lines = new FairLines<Job>();
  let running = 0;
  /** Recent start time (moving average), for Retry-After. */
  let startMs = 1_000;

  const next = () => {
    while (running < limits.concurrency) {
      const job = lines.shift();
      if (!job) return;
      job.run();
    }
  };

  return {
    run<T>(account: string, start: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      const why = admit(limits, { running, queued: lines.size, accountQueued: lines.waiting(account) });
      if (why !== 'ok')
        return Promise.reject(
          new WakeRefused(why, retryAfterSeconds({ queued: lines.size, concurrency: limits.concurrency, startMs })),
        );
      return new Promise<T>((resolve, reject) => {
        const job: Job = {
          run: () => {
            signal?.removeEventListener('abort', onAbort);
            running++;
            const t0 = Date.now();
            start()
              .then(resolve, reject)
              .finally(() => {
                startMs = startMs * 0.8 + (Date.now() - t0) * 0.2;
                running--;
                next();
              });
          },
        };
        const onAbort = () => {
          if (lines.remove(account, job)) reject(signal!.reason);
        };
        if (signal?.aborted) return reject(signal.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        lines.push(account, job);
        next();
      });
    },
    stats: () => ({ running, queued: lines.size }),
  };
}
