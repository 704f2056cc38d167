import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  LogController,
} from "fastify";
import type { Config } from "./config/schema.ts";
import { BODY_LIMIT_BYTES, installBodyParsers } from "./http/body-parsers.ts";
import { installErrorHandling } from "./http/error-handler.ts";
import { closeIdleConnectionsOnClose } from "./http/idle-connections.ts";
import { installAccessLog, loggerOptions } from "./http/logger.ts";
import { installRequestId, newRequestId } from "./http/request-id.ts";
import { installRequestTrace } from "./http/request-trace.ts";
import { PREFIX } from "./http/surface.ts";
import { createJobQueue } from "./jobs/create-job-queue.ts";
import type { JobQueue } from "./jobs/job-queue.ts";
import type { CounterStore } from "./limits/counter-store.ts";
import { createCounterStore } from "./limits/create-counter-store.ts";
import { limitMetrics } from "./limits/limit-metrics.ts";
import { installRouteLimiters } from "./limits/route-limiters.ts";
import { TrustedNetworks } from "./limits/trusted-networks.ts";
import { MetricsRegistry } from "./metrics/metrics-registry.ts";
import { adminRoutes } from "./routes/admin/index.ts";
import { appApiRoutes } from "./routes/app/index.ts";
import { keyApiRoutes } from "./routes/v1/index.ts";
import { createServices, type Services } from "./services/create-services.ts";
import type { Store } from "./store/database.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The domain services the routes use, for the composition root and tests. */
    services: Services;
    /** The process's metrics, exposed at `GET /admin/v1/metrics`. */
    metrics: MetricsRegistry;
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
}

/** The composition root: one Fastify instance with every plugin and route of the service. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: loggerOptions(config.server.log_level) }),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: newRequestId,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    trustProxy: config.server.trust_proxy,
    return503OnClosing: true,
  });
  const jobs = deps.jobQueue ?? createJobQueue(config, app.log);
  const services = createServices(config, deps.store, deps.now, app.log, jobs);
  // Usage of requests that ended while closing is written before the store closes.
  app.addHook("onClose", async () => {
    // Running jobs (titles) still use engines, billing and the store: they end first.
    await services.jobs.close();
    services.billing.stopSweeper();
    services.health.stop();
    await services.billing.drain();
    await services.upstream.close();
  });

  const metrics = new MetricsRegistry();
  const limitCounters = limitMetrics(metrics);
  const counterStore =
    deps.counterStore ?? (await createCounterStore(config, { log: app.log, metrics: limitCounters }));
  app.addHook("onClose", () => counterStore.close());
  const limits = { store: counterStore, now: deps.now ?? (() => new Date()), refused: limitCounters.refused };

  closeIdleConnectionsOnClose(app);
  installRequestId(app);
  installRequestTrace(app);
  installAccessLog(app);
  installBodyParsers(app);
  installErrorHandling(app);
  app.decorateRequest("principal", null);
  app.decorateRequest("user", null);
  app.decorate("services", services);
  app.decorate("metrics", metrics);
  installRouteLimiters(app, {
    ...limits,
    trusted: new TrustedNetworks(config.installation.trusted_networks),
  });

  app.get("/healthz", () => ({ status: "ok" }));
  await app.register(keyApiRoutes, {
    prefix: PREFIX.key,
    config,
    services,
    limits,
    plugins: deps.keyApiPlugins ?? [],
    text: services.text,
    catalogue: services.catalogue,
  });
  await app.register(appApiRoutes, { prefix: PREFIX.app, config, services });
  if (config.server.admin_token) {
    const adminToken = config.server.admin_token;
    await app.register(adminRoutes, {
      prefix: PREFIX.admin,
      adminToken,
      operator: services.operator,
      metrics,
    });
  }
  return app;
}
