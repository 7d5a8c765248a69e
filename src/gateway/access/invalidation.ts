// Cross-process cache invalidation over Redis pub/sub, one channel per topic. `keys`: a process
// that revokes, grants or ungrants a key (or changes a membership or the programme) announces it,
// and every gateway drops its cached resolution. `workspaces`: a workspace was deleted, and every
// gateway drops the cached resolutions of keys acting in it. `routing`: a management write to a
// workspace, its presets or its credentials, and every gateway drops its routing configuration.
// `endpoints`: a gateway saw an endpoint's shared capacity fail, and every gateway counts it unhealthy.
// Without Redis each cache is trusted for its TTL in the other processes.
import type { Logger } from '../../shared/log.ts';
import { isTimeout, openRedis, type RedisLink } from '../store/redis.ts';

const CHANNELS = {
  keys: 'cohort:keys:invalidate',
  workspaces: 'cohort:workspaces:deleted',
  routing: 'cohort:routing:invalidate',
  endpoints: 'cohort:endpoints:failed',
} as const;
export type Topic = keyof typeof CHANNELS;
/** Message meaning "drop everything of this topic". */
const ALL = '*';

export type InvalidationBus = {
  /** Tells every subscribed process to drop one entry (a key hash, a workspace id), or all when null.
   * Fails (within the Redis timeout) when Redis does not answer: the caches' TTLs bound the change's delay. */
  publish(topic: Topic, id: string | null): Promise<void>;
  /** Calls fn for each announcement of the topic (own ones included); also with null after a reconnect, when messages may have been missed. */
  subscribe(topic: Topic, fn: (id: string | null) => void): void;
  close(): Promise<void>;
};

/** Connects within twice `timeoutMs` or throws RedisUnreachable (store/redis.ts) saying so. */
export async function connectInvalidationBus(opts: {
  redisUrl: string;
  log?: Logger;
  publishOnly?: boolean;
  /** The gateway's Redis link to publish on; without it the bus opens its own. */
  redis?: RedisLink;
  timeoutMs?: number;
}): Promise<InvalidationBus> {
  const timeoutMs = opts.timeoutMs ?? opts.redis?.timeoutMs ?? 1_000;
  const onError = (err: Error) => opts.log?.warn({ err }, 'invalidation channel: redis error');
  const pub = opts.redis ?? (await openRedis({ url: opts.redisUrl, timeoutMs, onError }));
  const ownPub = !opts.redis;
  let sub: RedisLink | null = null;
  try {
    sub = opts.publishOnly ? null : await openRedis({ url: opts.redisUrl, timeoutMs, subscriber: true, onError });
  } catch (err) {
    if (ownPub) await pub.close();
    throw err;
  }
  const listeners: { topic: Topic; fn: (id: string | null) => void }[] = [];
  const emit = (topic: Topic | null, id: string | null) => {
    for (const l of listeners) if (topic === null || l.topic === topic) l.fn(id);
  };
  const topicOf = new Map(Object.entries(CHANNELS).map(([t, c]) => [c as string, t as Topic]));
  if (sub) {
    await sub.client.subscribe(...Object.values(CHANNELS));
    sub.client.on('message', (channel: string, message: string) => {
      const topic = topicOf.get(channel);
      if (topic) emit(topic, message === ALL ? null : message);
    });
    // attached after the first connect, so this fires only on reconnects
    sub.client.on('ready', () => emit(null, null));
  }
  return {
    async publish(topic, id) {
      if (!pub.usable()) throw new Error(`Redis is not answering (no reply within ${timeoutMs} ms, or not connected)`);
      await pub.client.publish(CHANNELS[topic], id ?? ALL).catch((err: unknown) => {
        pub.failed(err);
        throw isTimeout(err) ? new Error(`Redis did not answer within ${timeoutMs} ms`) : err;
      });
    },
    subscribe(topic, fn) {
      listeners.push({ topic, fn });
    },
    async close() {
      await sub?.close();
      if (ownPub) await pub.close();
    },
  };
}
