// Cross-process cache invalidation over Redis pub/sub, one channel per topic. `keys`: a process
// that revokes, grants or ungrants a key (or changes a membership or the programme) announces it,
// and every gateway drops its cached resolution. `workspaces`: a workspace was deleted, and every
// gateway drops the cached resolutions of keys acting in it. `routing`: a management write to a
// workspace, its presets or its credentials, and every gateway drops its routing configuration.
// Without Redis each cache is trusted for its TTL in the other processes.
import type { Logger } from '../../shared/log.ts';

const CHANNELS = {
  keys: 'cohort:keys:invalidate',
  workspaces: 'cohort:workspaces:deleted',
  routing: 'cohort:routing:invalidate',
} as const;
export type Topic = keyof typeof CHANNELS;
/** Message meaning "drop everything of this topic". */
const ALL = '*';

export type InvalidationBus = {
  /** Tells every subscribed process to drop one entry (a key hash, a workspace id), or all when null. */
  publish(topic: Topic, id: string | null): Promise<void>;
  /** Calls fn for each announcement of the topic (own ones included); also with null after a reconnect, when messages may have been missed. */
  subscribe(topic: Topic, fn: (id: string | null) => void): void;
  close(): Promise<void>;
};

export async function connectInvalidationBus(opts: {
  redisUrl: string;
  log?: Logger;
  publishOnly?: boolean;
}): Promise<InvalidationBus> {
  // Loaded only with REDIS_URL, as in ratelimit.ts.
  const { Redis } = await import('ioredis');
  const redisOpts = { maxRetriesPerRequest: 2, lazyConnect: true };
  const pub = new Redis(opts.redisUrl, redisOpts);
  const sub = opts.publishOnly ? null : new Redis(opts.redisUrl, redisOpts);
  const listeners: { topic: Topic; fn: (id: string | null) => void }[] = [];
  const emit = (topic: Topic | null, id: string | null) => {
    for (const l of listeners) if (topic === null || l.topic === topic) l.fn(id);
  };
  const topicOf = new Map(Object.entries(CHANNELS).map(([t, c]) => [c as string, t as Topic]));
  for (const c of [pub, sub])
    c?.on('error', (err: Error) => opts.log?.warn({ err }, 'invalidation channel: redis error'));
  await pub.connect();
  if (sub) {
    await sub.connect();
    await sub.subscribe(...Object.values(CHANNELS));
    sub.on('message', (channel: string, message: string) => {
      const topic = topicOf.get(channel);
      if (topic) emit(topic, message === ALL ? null : message);
    });
    // attached after the first connect, so this fires only on reconnects
    sub.on('ready', () => emit(null, null));
  }
  return {
    async publish(topic, id) {
      await pub.publish(CHANNELS[topic], id ?? ALL);
    },
    subscribe(topic, fn) {
      listeners.push({ topic, fn });
    },
    async close() {
      await Promise.all([pub.quit(), sub?.quit()]);
    },
  };
}
