// How a folder's tar goes from GNU tar's socket to a client (docs/guides/files.md, "A folder's
// download"): read into buffers of a pool that this process keeps (net's onread) rather than into a
// new buffer for each read, held while the walk that checks the folder runs, then written to the
// response, each buffer back in the pool once the response has written it. A new buffer for each
// 64 KiB read faulted in fresh pages for every byte of a download, which was most of the gateway's
// CPU for one (docs/performance-log.md). Once its response has begun, a download fails (the
// response aborted, never ended short) past its bound, when its source did not end well, or when its
// client took nothing for idleMs while bytes waited for it; a client gone stops the source.
// May import: node built-ins.
import type { ServerResponse } from 'node:http';
import type { OnReadOpts, Socket } from 'node:net';

/** What a response may hold unwritten before the socket's reads wait for it to drain. */
const WRITE_AHEAD_BYTES = 1 << 20;

/** Buffers that reads fill and responses write, kept for the life of the process: at most `keep`
 * wait unused. A buffer's old bytes never leave: only what a read has just put in it is written. */
export class BufferPool {
  private readonly free: Buffer[] = [];
  constructor(private readonly o: { bytes: number; keep: number }) {}
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.o.bytes);
  }
  give(b: Buffer): void {
    if (this.free.length < this.o.keep) this.free.push(b);
  }
  /** How many wait unused. */
  get idle(): number {
    return this.free.length;
  }
}

/** How a relay that has begun to send ends: `ended` says whether its source ended well (null) once
 * the source's bytes have all been read. */
export type Sending = {
  maxBytes: number;
  idleMs: number;
  ended: Promise<Error | null>;
  /** Told why a relay failed once its response had begun. */
  failed?(err: Error): void;
};

/** A socket's bytes (`onread`, given to net when the socket is made, then `attach`) held, at most
 * `aheadBytes`, until `send` (then written as they come) or `drop`. */
export class Relay {
  readonly onread: OnReadOpts;
  private socket: Socket | null = null;
  /** The buffer the socket reads into next, the pool's until the relay is over. */
  private next: Buffer | null = null;
  private readonly held: { buf: Buffer; n: number }[] = [];
  private heldBytes = 0;
  private sourceEnded = false;
  private res: ServerResponse | null = null;
  private sending: Sending | null = null;
  private total = 0;
  private idle: NodeJS.Timeout | undefined;
  private over = false;
  /** Why it failed before it was sent. */
  private failure: Error | null = null;

  constructor(private readonly o: { pool: BufferPool; aheadBytes: number }) {
    this.onread = {
      buffer: () => {
        // Once over, its socket is closed and reads nothing more: none is taken from the pool.
        if (this.over) return Buffer.allocUnsafeSlow(16);
        this.next = o.pool.take();
        return this.next;
      },
      callback: (n, buf) => {
        // The buffer read into is the chunk's now (given back once written, or dropped); net asks
        // for the next one after this returns.
        this.next = null;
        return this.read(buf as Buffer, n);
      },
    };
  }

  /** The socket made with `onread`. */
  attach(socket: Socket): void {
    this.socket = socket;
    socket.on('error', (err) => this.fail(err));
    const ended = () => {
      this.sourceEnded = true;
      if (this.sending) this.end();
    };
    if (socket.readableEnded) ended();
    else socket.once('end', ended);
  }

  /** Writes what is held and what comes after to `res` (its head written), and ends it. */
  send(res: ServerResponse, sending: Sending): void {
    this.res = res;
    this.sending = sending;
    res.once('close', () => {
      if (!res.writableFinished) this.fail(new Error('the client went away'), { quiet: true });
    });
    res.on('error', () => {});
    if (this.over) {
      res.destroy(this.failure ?? undefined);
      return;
    }
    // All that is held is written (it is in memory already); reading goes on once the response has
    // taken it.
    let more = true;
    for (const { buf, n } of this.held.splice(0)) {
      if (this.over) return;
      const taken = this.write(buf, n);
      more &&= taken;
    }
    this.heldBytes = 0;
    if (this.over) return;
    if (this.sourceEnded) return this.end();
    if (more) this.socket?.resume();
  }

  /** Refused before it was sent: the source stopped, what it had read dropped. */
  drop(): void {
    this.over = true;
    this.socket?.destroy();
    for (const { buf } of this.held.splice(0)) this.o.pool.give(buf);
    this.release();
  }

  /** A read of `n` bytes into `buf`: false stops reading (resumed by send or a drain). */
  private read(buf: Buffer, n: number): boolean {
    if (this.over) return false;
    if (!this.res) {
      this.held.push({ buf, n });
      this.heldBytes += n;
      return this.heldBytes < this.o.aheadBytes;
    }
    return this.write(buf, n);
  }

  private write(buf: Buffer, n: number): boolean {
    const res = this.res!;
    const { maxBytes, idleMs } = this.sending!;
    this.total += n;
    if (this.total > maxBytes) {
      this.o.pool.give(buf);
      this.fail(new Error(`the tar stream passed ${maxBytes} bytes (COHORT_FILES_MAX_MB) while it was sent`));
      return false;
    }
    // Back in the pool once written (or dropped with a response that failed).
    res.write(buf.subarray(0, n), () => this.o.pool.give(buf));
    // Not write()'s own answer: past the socket's 16 KiB mark, it says wait after each read, and
    // stopping and starting the reads cost more than what is held meanwhile.
    if (res.writableLength < WRITE_AHEAD_BYTES) return true;
    if (!this.idle) {
      this.idle = setTimeout(
        () => this.fail(new Error(`the client took nothing of the download for ${idleMs} ms (COHORT_FILES_IDLE_MS)`)),
        idleMs,
      );
      res.once('drain', () => {
        clearTimeout(this.idle);
        this.idle = undefined;
        if (!this.over) this.socket?.resume();
      });
    }
    this.socket?.pause();
    return false;
  }

  private end(): void {
    this.sending!.ended.then((err) => {
      if (err) return this.fail(err);
      if (this.over) return;
      this.over = true;
      this.release();
      this.res!.end();
    });
  }

  private fail(err: Error, o: { quiet?: boolean } = {}): void {
    if (this.over) return;
    this.over = true;
    this.failure = err;
    this.socket?.destroy();
    for (const { buf } of this.held.splice(0)) this.o.pool.give(buf);
    this.release();
    if (!this.res) return;
    if (!o.quiet) this.sending?.failed?.(err);
    // Aborted, not ended: the client sees a failed download, never a short one.
    this.res.destroy(err);
  }

  /** Called once its socket reads no more (ended, or destroyed first). */
  private release(): void {
    clearTimeout(this.idle);
    // The buffer the socket would have read into next, unless a read holds it.
    if (this.next) this.o.pool.give(this.next);
    this.next = null;
  }
}
