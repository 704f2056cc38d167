import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  LogController,
} from "fastify";
import type { Config } from "./config/schema.ts";
import { BODY_LIMIT_BYTES, installBodyParsers } from "./http/body-parsers.ts";
import { installErrorHandling } from "./http/error-handler.ts";
import { installAccessLog, loggerOptions } from "./http/logger.ts";
import { installRequestId, newRequestId } from "./http/request-id.ts";
import { PREFIX } from "./http/surface.ts";
import { adminRoutes } from "./routes/admin/index.ts";
import { keyApiRoutes } from "./routes/v1/index.ts";
import { createServices, type Services } from "./services/create-services.ts";
import type { Store } from "./store/database.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The domain services the routes use, for the composition root and tests. */
    services: Services;
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
  const services = createServices(config, deps.store, deps.now);

  installRequestId(app);
  installAccessLog(app);
  installBodyParsers(app);
  installErrorHandling(app);
  app.decorateRequest("principal", null);
  app.decorate("services", services);

  app.get("/healthz", () => ({ status: "ok" }));
  await app.register(keyApiRoutes, {
    prefix: PREFIX.key,
    config,
    services,
    plugins: deps.keyApiPlugins ?? [],
  });
  if (config.server.admin_token) {
    const adminToken = config.server.admin_token;
    await app.register(adminRoutes, { prefix: PREFIX.admin, adminToken, operator: services.operator });
  }
  return app;
}
