// The gateway's Redis connections, each with a bound on every wait (docs/failure-modes.md).
// Redis holds only shared counters and announcements: every caller has an in-process fallback,
// so a Redis that does not answer must cost a request at most one bounded wait, never a hang.
// - Every command has ioredis's own `commandTimeout` (COHORT_REDIS_TIMEOUT_MS); no offline queue,
//   so a command while disconnected fails at once instead of waiting for a reconnect.
// - A link is `usable()` while connected and no command has timed out since Redis last answered.
//   A timeout (a Redis that accepts connections but does not answer: frozen, swapping, a
//   half-open network) marks it hung: callers go straight to their fallback, and a PING every
//   quarter second finds out when it answers again. So only the requests in flight when Redis
//   hangs wait, for one timeout; the rest never touch it.
// - Connecting (at start, and the CLI's) is bounded too: ioredis's connectTimeout ends at the TCP
//   connect, and a frozen Redis accepts connections but never answers the ready check.
// May import: ioredis (loaded only with a URL), node built-ins.
import type { Redis } from 'ioredis';

export type RedisLink = {
  readonly client: Redis;
  /** Whether request-path callers should use Redis now (connected, not hung). */
  usable(): boolean;
  /** Tells the link a command failed; a timeout marks it hung until Redis answers a PING. */
  failed(err: unknown): void;
  /** The bound on each command, for messages. */
  readonly timeoutMs: number;
  close(): Promise<void>;
};

const PROBE_MS = 250;
const TIMED_OUT = 'Command timed out';

export const isTimeout = (err: unknown) => err instanceof Error && err.message === TIMED_OUT;

export class RedisUnreachable extends Error {}

/**
 * Opens a connection and waits until it is ready, for at most `timeoutMs` × 2 (a TCP connect
 * and a ready check); throws RedisUnreachable saying which.
 */
export async function openRedis(o: {
  url: string;
  timeoutMs: number;
  /** A subscriber's connection: no command timeout (it waits for messages), same bounded connect. */
  subscriber?: boolean;
  onError?: (err: Error) => void;
  /** Told when the link turns hung (true) and when Redis answers again (false). */
  onHung?: (hung: boolean) => void;
}): Promise<RedisLink> {
  const { Redis: Client } = await import('ioredis');
  const client = new Client(o.url, {
    lazyConnect: true,
    connectTimeout: o.timeoutMs,
    ...(o.subscriber ? {} : { commandTimeout: o.timeoutMs }),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // Reconnects at most a second apart: a Redis back from an outage is used again within a second.
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
  });
  // ioredis reconnects by itself; the last error says why a connect failed ("Connection is closed" does not).
  let lastError: Error | null = null;
  client.on('error', (err: Error) => {
    lastError = err;
    o.onError?.(err);
  });
  let timer: NodeJS.Timeout | undefined;
  const limit = o.timeoutMs * 2;
  try {
    await Promise.race([
      client.connect(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RedisUnreachable(`Redis did not answer within ${limit} ms`)), limit);
      }),
    ]);
  } catch (err) {
    client.disconnect();
    if (err instanceof RedisUnreachable) throw err;
    throw new RedisUnreachable(`cannot reach Redis: ${(lastError ?? (err as Error)).message}`);
  } finally {
    clearTimeout(timer);
  }

  let hung = false;
  let probe: NodeJS.Timeout | null = null;
  let closed = false;
  const probing = () => {
    if (probe || closed) return;
    probe = setInterval(() => {
      if (pinging) return;
      pinging = true;
      client
        .ping()
        .then(
          () => {
            hung = false;
            o.onHung?.(false);
            if (probe) clearInterval(probe);
            probe = null;
          },
          () => {},
        )
        .finally(() => (pinging = false));
    }, PROBE_MS);
    probe.unref();
  };
  let pinging = false;

  return {
    client,
    timeoutMs: o.timeoutMs,
    usable: () => !hung && client.status === 'ready',
    failed(err) {
      if (!isTimeout(err) || hung) return;
      hung = true;
      o.onHung?.(true);
      probing();
    },
    async close() {
      closed = true;
      if (probe) clearInterval(probe);
      client.disconnect();
    },
  };
}
