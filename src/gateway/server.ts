// Assembles and starts one gateway process: store, migrations, bootstrap, services, HTTP.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { createLogger, scrub, type Logger } from '../shared/log.ts';
import { openStore, type StoreOptions } from './store/db.ts';
import { migrate } from './store/migrate.ts';
import { createAuthenticator } from './access/auth.ts';
import { connectInvalidationBus } from './access/invalidation.ts';
import { openRedis } from './store/redis.ts';
import { lockDataDir } from './store/lock.ts';
import { createSealer, loadMasterKey } from './crypto/seal.ts';
import { seedIfEmpty, writeBootstrapFile, type Bootstrap } from './access/bootstrap.ts';
import { createInternLifecycle } from './interns/lifecycle.ts';
import { createLocalProvisioner, type Provisioner } from './interns/provisioner/index.ts';
import { createTurnLimiter } from './interns/ratelimit.ts';
import { createConcurrencyLimiter } from './access/concurrency.ts';
import { createLedger } from './access/budgets.ts';
import { spentSince } from './access/spend.ts';
import { guardConnections, type Refused } from './http/connections.ts';
import { createInferenceService } from './inference/service.ts';
import { buildApp } from './http/app.ts';
import { createOpenApiRegistry } from './http/openapi.ts';
import { rootModules, routeModules } from './routes.ts';
import { createMetrics } from './http/metrics.ts';
import { createBroadcaster } from './observability/broadcast.ts';
import { openDestinations } from './observability/destinations.ts';
import { createRetention } from './observability/retention.ts';
import { createHealth } from './health.ts';
import { internsByPower, internsByStatus } from './interns/interns.ts';
import { createFleet, type Fleet } from './interns/hibernation.ts';
import { createInternFiles } from './interns/files.ts';
import type { Ctx } from './context.ts';
import { OpenStreams } from '../shared/sse/write.ts';
import { agentMayCall, fromIntern, listenForInterns } from './interns/intern-socket.ts';
import { egressHandler } from './interns/egress.ts';
import { listenForOperator, OperatorRefusal } from './admin-socket.ts';
import { parseAdmin, UsageError } from '../cli/admin.ts';
import type { Admin } from './access/identity.ts';
import { ApiError } from './errors.ts';
import { loadCatalogue } from './interns/agent-catalogue.ts';
import { createBackup, summary } from '../backup/index.ts';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createUidPool, installationUidRange } from './interns/provisioner/uids.ts';
import { seccompProgram } from '../runtime/sandbox/index.ts';
import { type SandboxHost, sweepStaleClaims } from './inference/tools/sandbox.ts';

/** What the server tools' ephemeral sandboxes borrow (inference/tools/sandbox.ts): a uid of the
 * interns' range for each, claimed and quarantined as an intern's, and the tenant's seccomp filter. */
function toolSandboxHost(config: Config): SandboxHost {
  const iso = config.isolation;
  const range = installationUidRange({ dataDir: config.dataDir, base: iso.uidBase, count: iso.uidCount });
  const uidDir = join(config.dataDir, 'run', 'uids');
  const pool = createUidPool({ dir: uidDir, base: range.base, size: range.count });
  const host: SandboxHost = {
    claimUid: (owner) => pool.claim(owner),
    releaseUid: (owner) => pool.release(owner),
    uidDir,
    filter: seccompProgram('tenant'),
  };
  sweepStaleClaims(host);
  return host;
}

export type Gateway = {
  app: FastifyInstance;
  ctx: Ctx;
  url: string;
  /** Credentials created on this start (first start on an empty store), else null. */
  bootstrap: Bootstrap | null;
  close(): Promise<void>;
};

export type GatewayOptions = {
  config: Config;
  log?: Logger;
  store?: StoreOptions;
  /**
   * What to do when the database is gone for good (PGlite's thread ended: every request that
   * needs it fails from then on). By default an error line, since a gateway inside another
   * program (a test runner) must not end it; `npm start` exits instead, for its supervisor to
   * start a new one.
   */
  onStoreLost?: (err: Error) => void;
};

/** A listen failure in words that say what to change, instead of a bare EADDRINUSE. */
function listenProblem(err: unknown, config: Config): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE')
    return new Error(
      `${where} is already in use (another cohort, or another program): stop it, or start on another port, e.g. PORT=${config.port + 1} npm start`,
    );
  if (code === 'EACCES')
    return new Error(`${where} needs privileges this user lacks: choose a port above 1023 with PORT`);
  if (code === 'EADDRNOTAVAIL')
    return new Error(
      `HOST=${config.host} is not an address of this machine: use 127.0.0.1, 0.0.0.0 or one of its own addresses`,
    );
  return err instanceof Error ? err : new Error(String(err));
}

/** The store (migrated, seeded on first start), and Redis with its invalidation bus where configured. */
async function openBackends(o: { config: Config; log: Logger; opts: GatewayOptions }) {
  const { config, log, opts } = o;
  const storeOpts = opts.store ?? {
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    pgSchema: config.pgSchema,
    timeoutMs: config.faults.dbTimeoutMs,
  };
  const unlock = !storeOpts.databaseUrl && storeOpts.dataDir ? lockDataDir(storeOpts.dataDir) : () => {};
  const onLost =
    opts.onStoreLost ??
    ((err: Error) =>
      log.error(
        { reason: scrub(err.message) },
        'lost the database; requests that need it fail until the gateway is restarted',
      ));
  const store = await openStore({ ...storeOpts, log, onLost });
  await migrate(store);
  const bootstrap = await seedIfEmpty(store.db);
  if (bootstrap)
    log.info(
      { file: writeBootstrapFile(config.dataDir, bootstrap) },
      'bootstrapped an organization; its keys are in the file named here',
    );
  // One Redis connection for the request path's commands (slots, turn counts, announcements, readiness), each bounded.
  const redis = config.redisUrl
    ? await openRedis({
        url: config.redisUrl,
        timeoutMs: config.faults.redisTimeoutMs,
        onHung: (hung) =>
          hung
            ? log.warn(
                { timeoutMs: config.faults.redisTimeoutMs },
                'Redis stopped answering; limits count in process until it answers again',
              )
            : log.info('Redis answers again; limits are shared again'),
      })
    : undefined;
  const bus = config.redisUrl
    ? await connectInvalidationBus({ redisUrl: config.redisUrl, redis, log }).catch(async (err) => {
        await redis?.close();
        throw err;
      })
    : undefined;
  return { store, storeOpts, unlock, redis, bus, bootstrap };
}

/** Guards the server's connections by the caps; a flood of refused connections is one line a
 * minute, not one a connection. Returns the report's timer. */
function countRefusals(o: { server: Server; config: Config; log: Logger }) {
  const refusals = { gateway: 0, address: 0 };
  guardConnections(o.server, o.config.connections, (why: Refused) => refusals[why]++);
  return setInterval(() => {
    if (!refusals.gateway && !refusals.address) return;
    o.log.warn(
      { overGatewayCap: refusals.gateway, overAddressCap: refusals.address },
      'refused connections over the connection caps in the last minute',
    );
    refusals.gateway = refusals.address = 0;
  }, 60_000).unref();
}

/** The gateway's local doors: the interns' socket (their model requests and egress tunnels) and
 * the operator's (backup and admin commands from the CLI). */
async function listenLocally(o: {
  config: Config;
  app: FastifyInstance;
  ctx: Ctx;
  provisioner: Provisioner;
  masterKey: Buffer;
}) {
  const { config, app, ctx, provisioner, masterKey } = o;
  const internSocket = await listenForInterns({ dataDir: config.dataDir, server: app.server });
  const operator = await listenForOperator({
    dataDir: config.dataDir,
    actions: {
      backup: (file) => createBackup({ store: ctx.store, provisioner, masterKey, file }).then(summary),
      admin: (argv) =>
        runAdminHere(argv, {
          db: ctx.store.db,
          // The change is made; a lost announcement leaves other gateways to their key cache TTL.
          announce: (hash) =>
            ctx.auth
              .invalidate(hash ?? undefined)
              .catch((err: Error) => ctx.log.warn({ err }, 'could not announce a key change to other gateways')),
        }),
    },
  });
  app.server.on(
    'connect',
    egressHandler({
      policy: config.egress,
      fromIntern,
      onTunnel: (target, allowed) => ctx.log.info({ target, allowed }, 'intern egress'),
    }),
  );
  return { internSocket, operator };
}

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const { config } = opts;
  // Everything the gateway writes is its own (docs/internals/architecture.md#principles, 5): the data dir
  // 0700, files 0600.
  process.umask(0o077);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(config.dataDir, 0o700);
  const log = opts.log ?? createLogger({ level: config.logLevel });
  const { store, storeOpts, unlock, redis, bus, bootstrap } = await openBackends({ config, log, opts });
  const masterKey = loadMasterKey({ dataDir: config.dataDir, configured: config.masterKey });
  const sealer = createSealer(masterKey);
  const daemonEnv = {
    COHORT_INTERACTION_DEADLINE_MS: String(config.interactionDeadlineMs),
    COHORT_REPLAY_BUFFER_EVENTS: String(config.replayBufferEvents),
    COHORT_MAX_PAUSED_RUNS: String(config.maxPausedRuns),
    LOG_LEVEL: config.logLevel,
  };
  const agents = loadCatalogue({ file: config.agentsFile });
  const provisioner = createLocalProvisioner({
    dataDir: config.dataDir,
    daemonEnv,
    isolation: config.isolation,
    publicUrl: config.publicUrl,
    spares: config.fleet.spares,
    onSpareError: (message) => log.warn({ reason: message }, 'warm spare'),
  });
  const turnLimiter = await createTurnLimiter({ perMinute: config.turnsPerMinute, redis });
  const slots = await createConcurrencyLimiter({
    limits: config.concurrency,
    redis,
    gatewayLeaseMs: config.faults.gatewayLeaseMs,
  });
  const streams = new OpenStreams();
  let fleet: Fleet | null = null;
  const metrics = createMetrics({
    openStreams: () => streams.size,
    internsByStatus: () => internsByStatus(store.db),
    internsByPower: () => internsByPower(store.db),
    wakeQueue: () => fleet?.stats() ?? { running: 0, queued: 0 },
    requestLogPending: () => inference.requestLogPending(),
  });
  const obs = config.observability;
  const broadcast = createBroadcaster({
    log,
    installation: obs.installation && { key: 'installation', ...obs.installation, internalAllowed: true },
    destinationsOf: (workspaceId) => openDestinations(store.db, sealer, { workspaceId, egress: obs.egress }),
    cacheMs: config.routingCacheMs,
    timeoutMs: obs.timeoutMs,
    onSpans: (o) => metrics.broadcastSpans(o),
  });
  const retention = createRetention({ db: store.db, log, ...obs.retention });
  retention.start();
  const inference = createInferenceService({
    broadcast,
    tools: config.tools,
    sandboxHost: config.tools.sandbox ? toolSandboxHost(config) : null,
    slots,
    db: store.db,
    log,
    sealer,
    routingCacheMs: config.routingCacheMs,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    providerEnv: config.providerEnv,
    priceTableFile: config.priceTable,
    bus,
    redis,
    requestLog: {
      spillDir: join(config.dataDir, 'request-log'),
      maxQueued: config.faults.requestLogQueue,
      onLost: (reason, rows) => metrics.requestLogLost(reason, rows),
      onWriteError: () => metrics.requestLogWriteError(),
    },
    onUpstreamError: (p) => metrics.upstreamError(p),
    ledger: createLedger({
      spentSince: (scope, from) => spentSince(store.db, scope, from),
      redis,
      // A reservation outlives any request that could settle it (a tool loop runs several upstream calls).
      reserveTtlMs: 10 * 60_000,
      onRedisError: (err) => log.warn({ err }, 'budget counters: redis error; counting in this gateway'),
    }),
  });
  // This gateway's name on the leases of the work it holds on interns (leases.ts).
  const lease = { owner: randomUUID(), ms: config.faults.gatewayLeaseMs };
  const interns = createInternLifecycle({ db: store.db, sealer, log, provisioner, agents, lease });
  fleet = createFleet({
    db: store.db,
    sealer,
    provisioner,
    lifecycle: interns,
    log,
    idleMs: config.fleet.idleMs,
    queue: config.fleet.wake,
    lease,
    judging: () => interns.judging(),
    onWake: (s) => metrics.internWoken(s),
    onSleep: () => metrics.internSlept(),
    onWakeRefused: () => metrics.wakeRefused(),
  });
  const ctx: Ctx = {
    config,
    log,
    store,
    auth: createAuthenticator({ db: store.db, ttlMs: config.keyCacheMs, bus }),
    sealer,
    docs: createOpenApiRegistry(),
    inference,
    interns,
    fleet,
    files: createInternFiles({
      db: store.db,
      provisioner,
      fleet,
      spoolDir: join(config.dataDir, 'run', 'files'),
      internsDir: join(config.dataDir, 'interns'),
      limits: config.files,
      git: config.git,
      sealer,
      log,
    }),
    turnLimiter,
    slots,
    streams,
    agents,
    health: await createHealth({
      db: store.db,
      redis,
      storeWrites: () => inference.requestLogFault(),
      // PGlite's files are here: a full disk is seen before a write fails on it.
      disk: store.kind === 'pglite' ? storeOpts.dataDir : undefined,
      dbTimeoutMs: storeOpts.timeoutMs,
    }),
    metrics,
    broadcast,
  };
  const app = buildApp(ctx, routeModules, rootModules);
  // An intern reaches this server through its daemon's forwarder for model requests only.
  app.addHook('onRequest', (req, reply, done) => {
    if (!fromIntern(req.raw.socket) || agentMayCall(req.method, req.routeOptions.url)) return done();
    void reply
      .code(404)
      .type('application/json')
      .send({ error: { code: 404, message: 'resource not found' } });
  });
  const refusalReport = countRefusals({ server: app.server, config, log });
  /** What the gateway holds besides its HTTP server, let go of last (after a failed listen, or at close). */
  const release = async () => {
    clearInterval(refusalReport);
    ctx.interns.close();
    await ctx.fleet.close();
    await provisioner.close?.();
    await ctx.turnLimiter.close();
    await ctx.slots.close();
    await ctx.health.close();
    await ctx.broadcast.close();
    await retention.close();
    await bus?.close();
    await redis?.close();
    await store.close();
    unlock();
  };
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await app.close();
    await release();
    throw listenProblem(err, config);
  }
  const { internSocket, operator } = await listenLocally({ config, app, ctx, provisioner, masterKey });
  const { port } = app.server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  ctx.interns.setGatewayUrl(config.publicUrl ?? `http://${host}:${port}/api/v1`);
  await ctx.interns.readopt();
  return {
    app,
    ctx,
    url: `http://${host}:${port}/api/v1`,
    bootstrap,
    async close() {
      // In-flight requests finish; streams still open after the grace are ended with an error chunk.
      const grace = setTimeout(() => {
        log.info({ streams: ctx.streams.size }, 'shutdown grace passed: ending open streams');
        ctx.streams.endAll();
      }, config.shutdownGraceMs);
      // A keep-alive connection whose last response ended would hold the close open until its
      // client lets go (Fastify keeps idle ones 72 s): while closing, idle ones are closed.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      await internSocket.close();
      await operator.close();
      await app.close();
      clearTimeout(grace);
      clearInterval(sweep);
      ctx.interns.close();
      await ctx.interns.idle();
      await release();
    },
  };
}

/** An admin command line the CLI sent through the admin socket (it could not open the embedded
 * store this gateway holds), run here as the CLI would run it. */
async function runAdminHere(argv: string[], admin: Admin): Promise<unknown> {
  try {
    const parsed = parseAdmin(argv);
    if (parsed.help !== undefined) return { json: null, lines: [parsed.help] };
    return await parsed.action({ admin });
  } catch (err) {
    if (err instanceof UsageError || err instanceof ApiError)
      throw new OperatorRefusal(err instanceof ApiError ? err.status : 400, err.message);
    throw err;
  }
}
