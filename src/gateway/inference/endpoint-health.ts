// What the router sorts endpoints by: this gateway's measurements, shared with the other gateways
// through Redis when there is one (shared-stats.ts), and failures announced on the bus's endpoints
// channel so that every gateway steers around an unwell endpoint at once.
import { uuidv7 } from '../crypto/uuid7.ts';
import type { Logger } from '../../shared/log.ts';
import type { InvalidationBus } from '../access/invalidation.ts';
import type { RedisLink } from '../store/redis.ts';
import { createEndpointStats } from './endpoint-stats.ts';
import { createSharedStats } from './shared-stats.ts';

export function createEndpointHealth(o: { bus?: InvalidationBus; redis?: RedisLink; log: Logger }) {
  const shared = o.redis ? createSharedStats({ redis: o.redis, log: o.log }) : null;
  const stats = shared ?? createEndpointStats();
  /** This gateway, on the endpoints channel: its own announcements are already counted. */
  const instance = uuidv7();
  o.bus?.subscribe('endpoints', (message) => {
    if (!message) return;
    try {
      const [from, key] = JSON.parse(message) as [string, string];
      if (from !== instance && typeof key === 'string') shared ? shared.heard(key) : stats.failure(key);
    } catch {
      // not ours to read
    }
  });
  return {
    stats,
    /** A failure of an endpoint's shared capacity, counted here and announced to the other gateways. */
    failed(key: string) {
      stats.failure(key);
      o.bus
        ?.publish('endpoints', JSON.stringify([instance, key]))
        .catch((err: Error) => o.log.debug({ err }, 'could not announce an endpoint failure'));
    },
    close: () => shared?.close(),
  };
}
