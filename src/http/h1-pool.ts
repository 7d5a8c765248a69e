// The idle side of the HTTP/1.1 client: connections that ended a response cleanly, kept per base
// URL for a while so the next request to the same server skips the connect. A connection leaves
// the pool when it is taken, when its time is up, or at once when the server closes it or sends
// bytes nobody asked for.
// May import: node. Used by h1.ts.
import type { Socket } from 'node:net';

type Idle = { socket: Socket; timer: NodeJS.Timeout; gone: () => void };

export class IdlePool {
  private readonly idle = new Map<string, Idle[]>();

  constructor(private readonly maxPerKey: number) {}

  /** Keeps a connection for `ms`; one over the limit (or already closed) is destroyed instead. */
  put(key: string, socket: Socket, ms: number): void {
    const list = this.idle.get(key) ?? [];
    if (list.length >= this.maxPerKey || socket.destroyed) return void socket.destroy();
    const gone = () => this.evict(key, entry);
    const entry: Idle = { socket, timer: setTimeout(gone, ms).unref(), gone };
    socket.on('close', gone).on('error', gone).on('data', gone);
    if (socket.isPaused()) socket.resume();
    socket.unref();
    list.push(entry);
    this.idle.set(key, list);
  }

  /** The most recently kept connection that can still carry a request, or null. */
  take(key: string): Socket | null {
    const list = this.idle.get(key);
    while (list?.length) {
      const entry = list.pop()!;
      clearTimeout(entry.timer);
      entry.socket.off('close', entry.gone).off('error', entry.gone).off('data', entry.gone);
      if (!list.length) this.idle.delete(key);
      if (entry.socket.destroyed || !entry.socket.writable) continue;
      entry.socket.ref();
      return entry.socket;
    }
    return null;
  }

  close(): void {
    for (const list of this.idle.values()) for (const entry of list) this.drop(entry);
    this.idle.clear();
  }

  private evict(key: string, entry: Idle): void {
    const list = this.idle.get(key);
    const i = list?.indexOf(entry) ?? -1;
    if (i !== -1) list!.splice(i, 1);
    if (list && !list.length) this.idle.delete(key);
    this.drop(entry);
  }

  private drop(entry: Idle): void {
    clearTimeout(entry.timer);
    entry.socket.destroy();
  }
}
