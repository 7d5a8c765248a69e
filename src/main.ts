// `npm start`: one gateway process; graceful shutdown on SIGTERM/SIGINT, exit 1 if it loses its database.
import { loadConfig } from './gateway/config.ts';
import { createLogger, prettyFor, scrub } from './shared/log.ts';
import { startGateway } from './gateway/server.ts';

const config = loadConfig();
const log = createLogger({ level: config.logLevel, pretty: prettyFor(config.logFormat) });
/** One fatal line, the reason said in words (never a trace), then exit 1. */
function exitFatal(err: unknown, message: string): never {
  log.fatal({ reason: scrub(err instanceof Error ? err.message : String(err)) }, message);
  process.exit(1);
}
// A start that fails (database or Redis unreachable, data dir in use); and, once running, the
// database lost for good: the gateway could only answer 500, and a new process opens it again,
// so this one makes way for the one its supervisor starts.
const gateway = await startGateway({
  config,
  log,
  onStoreLost: (err) => exitFatal(err, 'lost the database, exiting so a supervisor can restart the gateway'),
}).catch((err: unknown) => exitFatal(err, 'cohort could not start'));

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    // A second Ctrl-C means now. Daemons are their own processes and keep running.
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting without waiting for in-flight requests');
      process.exit(1);
    }
    stopping = true;
    log.info(
      { signal, grace_ms: config.shutdownGraceMs },
      'shutting down: finishing in-flight requests; streams still open after the grace are ended',
    );
    gateway.close().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
// Said only once the signals are handled, so a supervisor that stops the gateway as soon as it
// reads this line gets a graceful shutdown, not the default action of a signal.
log.info({ url: gateway.url, store: gateway.ctx.store.kind }, 'cohort gateway listening');
