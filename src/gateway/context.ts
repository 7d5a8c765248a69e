// What route modules receive: the store, configuration, logger, services, metrics and the OpenAPI registry.
import type { Config } from './config.ts';
import type { Logger } from '../shared/log.ts';
import type { Store } from './store/db.ts';
import type { Authenticator } from './access/auth.ts';
import type { Sealer } from './crypto/seal.ts';
import type { OpenApiRegistry } from './http/openapi.ts';
import type { InferenceService } from './inference/service.ts';
import type { InternLifecycle } from './interns/lifecycle.ts';
import type { TurnLimiter } from './interns/ratelimit.ts';
import type { ConcurrencyLimiter } from './access/concurrency.ts';
import type { OpenStreams } from '../shared/sse/write.ts';
import type { Catalogue } from './interns/agent-catalogue.ts';
import type { Health } from './health.ts';
import type { Metrics } from './http/metrics.ts';
import type { Fleet } from './interns/hibernation.ts';
import type { Broadcaster } from './observability/broadcast.ts';
import type { InternFiles } from './interns/files.ts';

export type Ctx = {
  config: Config;
  log: Logger;
  store: Store;
  auth: Authenticator;
  sealer: Sealer;
  docs: OpenApiRegistry;
  inference: InferenceService;
  interns: InternLifecycle;
  /** Hibernation of idle interns and the wake queue (docs/fleet.md). */
  fleet: Fleet;
  /** Interns' work folders from outside (files.ts). */
  files: InternFiles;
  turnLimiter: TurnLimiter;
  /** Concurrent model requests and intern chat streams per key and account. */
  slots: ConcurrencyLimiter;
  /** Open SSE responses of every route, ended by the shutdown once its grace has passed. */
  streams: OpenStreams;
  /** The agents interns may run (the operator's catalogue). */
  agents: Catalogue;
  health: Health;
  metrics: Metrics;
  /** Spans of broadcasting workspaces to their collectors (docs/guides/observability.md). */
  broadcast: Broadcaster;
};
