// Cross-process key invalidation over Redis pub/sub: a process that revokes, grants or ungrants a
// key (or changes a membership or the programme) announces it, and every gateway drops its cached
// resolution at once instead of trusting it for the rest of the cache TTL.
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';

export const KEY_CHANNEL = 'cohort:keys:invalidate';
/** Message meaning "drop every cached key": identity changes that touch many keys at once. */
const ALL = '*';

export type KeyBus = {
  /** Tells every subscribed process to drop the key with this hash, or every key when null. */
  publish(keyHash: string | null): Promise<void>;
  /** Calls fn for each announcement (own ones included); also with null after a reconnect, when messages may have been missed. */
  subscribe(fn: (keyHash: string | null) => void): void;
  close(): Promise<void>;
};

export async function connectKeyBus(opts: { redisUrl: string; log?: Logger; publishOnly?: boolean }): Promise<KeyBus> {
  const redisOpts = { maxRetriesPerRequest: 2, lazyConnect: true };
  const pub = new Redis(opts.redisUrl, redisOpts);
  const sub = opts.publishOnly ? null : new Redis(opts.redisUrl, redisOpts);
  const listeners: ((keyHash: string | null) => void)[] = [];
  const emit = (h: string | null) => listeners.forEach((fn) => fn(h));
  for (const c of [pub, sub]) c?.on('error', (err: Error) => opts.log?.warn({ err }, 'key invalidation channel: redis error'));
  await pub.connect();
  if (sub) {
    await sub.connect();
    await sub.subscribe(KEY_CHANNEL);
    sub.on('message', (_channel: string, message: string) => emit(message === ALL ? null : message));
    // attached after the first connect, so this fires only on reconnects
    sub.on('ready', () => emit(null));
  }
  return {
    async publish(keyHash) {
      await pub.publish(KEY_CHANNEL, keyHash ?? ALL);
    },
    subscribe(fn) {
      listeners.push(fn);
    },
    async close() {
      await Promise.all([pub.quit(), sub?.quit()]);
    },
  };
}
