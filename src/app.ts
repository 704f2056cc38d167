import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  LogController,
} from "fastify";
import { openSharedMoney } from "./billing/shared/open-shared-money.ts";
import { loadConfig } from "./config/load.ts";
import type { Config } from "./config/schema.ts";
import { warnWithoutChatModel } from "./engines/chat-setup-check.ts";
import { checkMachines } from "./engines/machine-check.ts";
import { warnZonesWithoutModeration } from "./engines/moderation-setup-check.ts";
import { BODY_LIMIT_BYTES, installBodyParsers } from "./http/body-parsers.ts";
import { applyClientTimeouts, CHECK_EVERY_MS, closeStalledAnswers } from "./http/client-timeouts.ts";
import { installCors } from "./http/cors.ts";
import {
  answerClientError,
  installErrorHandling,
  replaceWithError,
  sendFrameworkError,
} from "./http/error-handler.ts";
import { closeIdleConnectionsOnClose } from "./http/idle-connections.ts";
import { installAccessLog, loggerOptions } from "./http/logger.ts";
import { installRequestId, newRequestId } from "./http/request-id.ts";
import { requestLoggerFactory } from "./http/request-logger.ts";
import { installRequestMetrics } from "./http/request-metrics.ts";
import { installRequestTrace } from "./http/request-trace-hook.ts";
import { PREFIX } from "./http/surface.ts";
import { installUnstorableTextGuard } from "./http/unstorable-text-guard.ts";
import { createDurableQueue, createJobQueue } from "./jobs/create-job-queue.ts";
import type { JobQueue } from "./jobs/job-queue.ts";
import type { CounterStore } from "./limits/counter-store.ts";
import { createCounterStore } from "./limits/create-counter-store.ts";
import { DeferredTakes } from "./limits/deferred-takes.ts";
import { installRouteLimiters } from "./limits/route-limiters.ts";
import { TrustedNetworks } from "./limits/trusted-networks.ts";
import { createAppMetrics } from "./metrics/app-metrics.ts";
import { registerJobMetrics } from "./metrics/job-metrics.ts";
import { registerMachineMetrics } from "./metrics/machine-metrics.ts";
import type { MetricsRegistry } from "./metrics/metrics-registry.ts";
import { MetricsServer } from "./metrics/metrics-server.ts";
import { adminRoutes } from "./routes/admin/index.ts";
import { appApiRoutes } from "./routes/app/index.ts";
import { healthRoutes, type ReadinessCheck } from "./routes/health.ts";
import { imageFileRoutes } from "./routes/v1/images.ts";
import { keyApiRoutes } from "./routes/v1/index.ts";
import { startBackgroundJobs } from "./services/background-jobs.ts";
import { ConfigReloader } from "./services/config-reloader.ts";
import { createServices, type Services } from "./services/create-services.ts";
import type { Store } from "./store/database.ts";
import { webChatRoutes } from "./web/server/web-chat-routes.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The domain services the routes use, for the composition root and tests. */
    services: Services;
    /** The app's metrics, at `GET /admin/v1/metrics` and on the metrics listener (docs/metrics.md). */
    metrics: MetricsRegistry;
    /** Re-reads the configuration (SIGHUP, `POST /admin/v1/reload`). */
    reloader: ConfigReloader;
  }
}

/** What the app is built from. */
export interface AppDeps {
  config: Config;
  store: Store;
  /** The clock; tests move it. */
  now?: () => Date;
  /** A logger to use instead of one built from the config (tests capture logs with it). */
  logger?: FastifyBaseLogger;
  /** More key-API routes, registered behind the same authentication and limits (tests). */
  keyApiPlugins?: FastifyPluginAsync[];
  /** Rate-limit counters to use instead of the configured ones (tests); the app closes it. */
  counterStore?: CounterStore;
  /** A background-job queue to use instead of the configured one (tests); the app closes it. */
  jobQueue?: JobQueue;
  /** A queue of jobs that survive a restart to use instead of the configured one (tests); the app closes it. */
  durableQueue?: JobQueue;
  /** How a reload reads the configuration; by default the file and environment, as at start. */
  loadConfig?: () => Config;
  /** The credential the server wrote into its data folder: the operator API accepts it from this machine. */
  localOperatorToken?: string;
}

/** The composition root: one Fastify instance with every plugin and route of the service. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: loggerOptions(config.server.log_level) }),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: newRequestId,
    childLoggerFactory: requestLoggerFactory,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    // Only the proxy in front is believed: the client is the last X-Forwarded-For entry, the one it
    // appended. Earlier entries are whatever the client sent (a fresh or trusted address per request).
    trustProxy: config.server.trust_proxy ? (_address: string, hop: number) => hop === 0 : false,
    return503OnClosing: true,
    // Slow clients' limits (client-timeouts.ts) are checked this often, not Node's every 30 s.
    http: { connectionsCheckingInterval: CHECK_EVERY_MS, requireHostHeader: false },
    frameworkErrors: sendFrameworkError,
    clientErrorHandler: answerClientError,
  });
  const jobs = deps.jobQueue ?? createJobQueue(config, app.log);
  const appMetrics = createAppMetrics(config.installation.currency);
  const durableJobs = deps.durableQueue ?? createDurableQueue(config, deps.store, jobs, app.log);
  const limitCounters = appMetrics.limits;
  const counterStore =
    deps.counterStore ?? (await createCounterStore(config, { log: app.log, metrics: limitCounters }));
  const clock = deps.now ?? (() => new Date());
  // Several instances (PostgreSQL and Redis): what is left of the money is decided in Redis, and a
  // request that holds money there has its key limits taken in the same script call.
  const moneyAt = deps.store.usageJournal ? undefined : counterStore.money?.();
  const keyTakes = moneyAt ? new DeferredTakes(counterStore, clock) : undefined;
  const sharedMoney = moneyAt
    ? await openSharedMoney(
        moneyAt,
        deps.store,
        app.log,
        keyTakes && { deferred: keyTakes, prefix: moneyAt.counterPrefix },
      )
    : undefined;
  const services = createServices(
    config,
    deps.store,
    deps.now,
    app.log,
    jobs,
    { upstream: appMetrics.upstream, billing: appMetrics.billing },
    durableJobs,
    sharedMoney,
  );
  const metrics = appMetrics.registry;
  registerMachineMetrics(metrics, () => services.engines);
  registerJobMetrics(metrics, () => [services.jobs, services.durableJobs]);
  serveMetrics(app, metrics, config.server);
  const reloader = new ConfigReloader({
    services,
    load: deps.loadConfig ?? (() => loadConfig()),
    log: app.log,
    // At start and after every reload: one warning per machine that is down or lacks a model, one
    // per zone whose content check has no machine, and one when no chat model is set up at all.
    afterApply: (applied) => {
      warnWithoutChatModel(applied, app.log);
      warnZonesWithoutModeration(applied, app.log);
      void checkMachines(applied.machines, {
        timeoutMs: applied.engines.probe_timeout_ms,
        log: app.log,
        piperVoices: applied.engines.piper_voices,
      });
    },
  });
  // Usage of requests that ended while closing is written before the store closes.
  app.addHook("onClose", async () => {
    // Running jobs (titles, video steps) still use engines, billing and the store: they end first.
    services.videoUpkeep.stop();
    services.kbUpkeep.stop();
    services.titleUpkeep.stop();
    await services.jobs.close();
    if (services.durableJobs !== services.jobs) await services.durableJobs.close();
    services.billing.stopSweeper();
    services.imageFiles.stopSweeper();
    services.health.stop();
    await services.billing.drain();
    await sharedMoney?.stop();
    await services.upstream.close();
  });
  app.addHook("onClose", () => counterStore.close());

  const limits = { store: counterStore, now: clock, refused: limitCounters.refused };

  // Without `app.public_url`, mail links point to the address the server listens on.
  app.addHook("onListen", (done) => {
    services.publicUrl.listening(app.server.address());
    done();
  });
  closeIdleConnectionsOnClose(app);
  applyClientTimeouts(app.server);
  closeStalledAnswers(app.server);
  installRequestId(app);
  installRequestTrace(app);
  installAccessLog(app);
  installRequestMetrics(app, { metrics, knownModel: (id) => services.catalogue.find(id) !== undefined });
  installBodyParsers(app);
  installUnstorableTextGuard(app);
  installErrorHandling(app, {
    before: (request) => (keyTakes?.has(request.id) ? keyTakes.before(request.id) : undefined),
  });
  installCors(app, () => services.config.server.cors_origins);
  app.decorateRequest("principal", null);
  app.decorateRequest("user", null);
  app.decorate("services", services);
  app.decorate("metrics", metrics);
  app.decorate("reloader", reloader);
  installRouteLimiters(app, {
    ...limits,
    trusted: new TrustedNetworks(config.installation.trusted_networks),
  });

  const readiness = readinessChecks(deps.store, counterStore, jobs);
  await app.register(healthRoutes, { checks: () => readiness });
  await app.register(keyApiRoutes, {
    prefix: PREFIX.key,
    config,
    services,
    limits,
    ...(keyTakes
      ? {
          deferred: {
            takes: keyTakes,
            holdsMoney: (principal) => services.billing.holdsMoney(principal),
            replaceWith: replaceWithError,
          },
        }
      : {}),
    plugins: deps.keyApiPlugins ?? [],
  });
  // Image links need no key: they live beside the key API, not behind its authentication.
  await app.register(imageFileRoutes, { prefix: PREFIX.key, services });
  services.imageFiles.startSweeper();
  startBackgroundJobs(services);
  await app.register(appApiRoutes, { prefix: PREFIX.app, config, services });
  if (config.app.web_chat.enabled) await app.register(webChatRoutes, { services });
  if (config.server.admin_token || deps.localOperatorToken) {
    await app.register(adminRoutes, {
      prefix: PREFIX.admin,
      adminToken: config.server.admin_token,
      localToken: deps.localOperatorToken,
      services,
      metrics,
      reloader,
    });
  }
  return app;
}

/**
 * The metrics listener of `server.metrics_port` (none without it), started when the app is ready
 * (a port in use stops the start) and closed with it.
 */
function serveMetrics(app: FastifyInstance, metrics: MetricsRegistry, server: Config["server"]): void {
  const port = server.metrics_port;
  if (port === undefined) return;
  const listener = new MetricsServer(metrics);
  app.addHook("onReady", async () => {
    const bound = await listener.listen(port, server.metrics_host);
    app.log.info({ host: server.metrics_host, port: bound }, "metrics listening at /metrics");
  });
  app.addHook("onClose", () => listener.close());
}

/** What `GET /readyz` asks: the database, and Redis when the counters or the jobs live there. */
function readinessChecks(store: Store, counters: CounterStore, jobs: JobQueue): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [{ name: "database", check: () => store.ping() }];
  if (counters.ping)
    checks.push({ name: "redis (rate limits)", check: () => counters.ping?.() ?? Promise.resolve() });
  if (jobs.ping) checks.push({ name: "redis (jobs)", check: () => jobs.ping?.() ?? Promise.resolve() });
  return checks;
}
