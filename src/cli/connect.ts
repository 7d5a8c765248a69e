// Opens the store the gateway uses (DATABASE_URL + COHORT_PG_SCHEMA, else PGlite in the data dir)
// for one admin command, with migrations applied, and the key bus when REDIS_URL is set so that
// running gateways drop cached keys the command changed.
import type { Config } from '../gateway/config.ts';
import { openStore, type Store } from '../gateway/store/db.ts';
import { migrate } from '../gateway/store/migrate.ts';
import { lockDataDir } from '../gateway/store/lock.ts';
import { connectInvalidationBus, type InvalidationBus } from '../gateway/access/invalidation.ts';
import type { Admin } from '../gateway/access/identity.ts';

export type Session = { admin: Admin; store: Store; close(): Promise<void> };

/** pg's words for COHORT_DB_TIMEOUT_MS passing: waiting for a connection, connecting, a query
 * (Drizzle wraps a query's error as its cause). */
const isTimeout = (err: unknown): boolean =>
  (err instanceof Error && err.cause !== undefined && isTimeout(err.cause)) ||
  /timeout exceeded when trying to connect|Connection terminated due to connection timeout|Query read timeout/.test(
    err instanceof Error ? err.message : String(err),
  );

/** A PostgreSQL that did not answer within its bound, in the CLI's words; other errors as they are. */
export const unanswered = (config: Config, err: unknown): unknown =>
  config.databaseUrl && isTimeout(err)
    ? new Error(`PostgreSQL at DATABASE_URL did not answer within ${config.faults.dbTimeoutMs} ms`)
    : err;

export async function openSession(config: Config): Promise<Session> {
  // PGlite corrupts a data dir two processes open; the lock turns that into a clear refusal.
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  let store: Store | undefined;
  let bus: InvalidationBus | undefined;
  try {
    store = await openStore({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      pgSchema: config.pgSchema,
      poolSize: 2,
      timeoutMs: config.faults.dbTimeoutMs,
    });
    await migrate(store);
    // Bounded (docs/failure-modes.md): a Redis that accepts the connection but never answers is a
    // refusal within two timeouts, not a hang.
    bus = config.redisUrl
      ? await connectInvalidationBus({
          redisUrl: config.redisUrl,
          publishOnly: true,
          timeoutMs: config.faults.redisTimeoutMs,
        }).catch((err: Error) => {
          throw new Error(`REDIS_URL: ${err.message}; unset it to run without telling gateways`);
        })
      : undefined;
  } catch (err) {
    await store?.close().catch(() => {});
    unlock();
    throw unanswered(config, err);
  }
  const opened = store;
  return {
    store: opened,
    admin: {
      db: opened.db,
      // The change is made; a lost announcement only delays it in running gateways, so say so and carry on.
      announce: async (hash) => {
        await bus?.publish('keys', hash).catch((err: Error) => {
          process.stderr.write(
            `cohort: warning: running gateways were not told (${err.message}); they see the change within COHORT_KEY_CACHE_MS\n`,
          );
        });
      },
    },
    async close() {
      await bus?.close();
      await opened.close();
      unlock();
    },
  };
}
