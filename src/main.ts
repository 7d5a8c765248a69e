// `npm start`: one gateway process with graceful shutdown on SIGTERM/SIGINT.
import { loadConfig } from './config.ts';
import { createLogger, scrub } from './log.ts';
import { startGateway } from './gateway/server.ts';

const config = loadConfig();
const log = createLogger({ level: config.logLevel });
// A start that fails (database or Redis unreachable, data dir in use) is said in words, not as a trace.
const gateway = await startGateway({ config, log }).catch((err: unknown) => {
  log.fatal({ reason: scrub(err instanceof Error ? err.message : String(err)) }, 'cohort could not start');
  process.exit(1);
});
log.info({ url: gateway.url, store: gateway.ctx.store.kind }, 'cohort gateway listening');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    gateway.close().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
