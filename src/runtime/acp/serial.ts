// Per-key serial execution: the SDK starts notification handlers without awaiting them, so
// session updates are chained per session to be handled strictly in arrival order.
export class SerialQueues {
  private readonly tails = new Map<string, Promise<void>>();

  push(key: string, fn: () => void | Promise<void>): Promise<void> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(fn).catch(() => undefined);
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves once everything pushed for the key so far has run. */
  drain(key: string): Promise<void> {
    return this.tails.get(key) ?? Promise.resolve();
  }
}
