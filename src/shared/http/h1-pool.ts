// The idle side of the HTTP/1.1 client: connections that ended a response cleanly, kept per base
// URL for a while so the next request to the same server skips the connect. A connection leaves
// the pool when it is taken, when its time is up, or when its server closes it or sends bytes
// nobody asked for (h1.ts destroys it then). Keeping and taking one adds no listener and no
// timer: each socket carries its deadline, and one sweep a second drops the spent ones.
// May import: node. Used by h1.ts.
import type { Socket } from 'node:net';

/** The request a socket carries (null while idle), read by its listeners in h1.ts. */
export const CALL = Symbol('call');
const IDLE_UNTIL = Symbol('idleUntil');

export type Carrier = Socket & {
  [CALL]?: { onData(chunk: Buffer): void; onEnd(): void; abort(err: Error): void } | null;
  [IDLE_UNTIL]?: number;
};

const SWEEP_MS = 1_000;

export class IdlePool {
  private readonly idle = new Map<string, Carrier[]>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly maxPerKey: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Keeps a connection for `ms`; one over the limit (or already closed) is destroyed instead. */
  put(key: string, socket: Carrier, ms: number): void {
    let list = this.idle.get(key);
    if (!list) this.idle.set(key, (list = []));
    if (list.length >= this.maxPerKey || socket.destroyed) return void socket.destroy();
    socket[IDLE_UNTIL] = this.now() + ms;
    if (socket.isPaused()) socket.resume();
    socket.unref();
    list.push(socket);
    this.sweeper ??= setInterval(this.sweep, SWEEP_MS).unref();
  }

  /** The most recently kept connection that can still carry a request, or null. */
  take(key: string): Carrier | null {
    const list = this.idle.get(key);
    if (!list) return null;
    const now = this.now();
    for (let socket = list.pop(); socket; socket = list.pop()) {
      if (usable(socket, now)) return socket.ref();
      socket.destroy();
    }
    return null;
  }

  close(): void {
    for (const list of this.idle.values()) for (const socket of list) socket.destroy();
    this.idle.clear();
    this.stopSweeping();
  }

  private readonly sweep = () => {
    const now = this.now();
    for (const [key, list] of this.idle) {
      const kept = list.filter((s) => usable(s, now) || void s.destroy());
      if (kept.length) this.idle.set(key, kept);
      else this.idle.delete(key);
    }
    if (!this.idle.size) this.stopSweeping();
  };

  private stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}

function usable(socket: Carrier, now: number): boolean {
  return !socket.destroyed && socket.writable && (socket[IDLE_UNTIL] ?? 0) > now;
}
