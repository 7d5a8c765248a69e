// One wake per intern in this process, whoever asks: later askers join the first one's, and it is
// aborted if every asker leaves (its signal) while it still waits (its turn in the wake queue).

export function createSharedWakes<T>(o: {
  /** Told of each wake as it starts (the lifecycle tracks them: InternLifecycle.trackWake). */
  onStart?: (id: string, done: Promise<T>) => void;
}) {
  const waking = new Map<string, { done: Promise<T>; waiters: number; abort: AbortController }>();
  /** The wake of `id` under way, or `start` as it, whose signal aborts once nobody waits for it any more. */
  return function join(id: string, signal: AbortSignal, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let w = waking.get(id);
    if (!w) {
      const abort = new AbortController();
      const done = start(abort.signal);
      w = { done, waiters: 0, abort };
      const entry = w;
      waking.set(id, entry);
      o.onStart?.(id, done);
      void done.catch(() => {}).finally(() => waking.get(id) === entry && waking.delete(id));
    }
    const entry = w;
    entry.waiters++;
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        if (--entry.waiters === 0) entry.abort.abort(signal.reason);
        reject(signal.reason);
      };
      if (signal.aborted) return leave();
      signal.addEventListener('abort', leave, { once: true });
      entry.done.then(resolve, reject).finally(() => signal.removeEventListener('abort', leave));
    });
  };
}
