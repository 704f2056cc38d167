import type { FastifyInstance } from "fastify";
import type { MetricsRegistry } from "../../metrics/metrics-registry.ts";
import type { ConfigReloader } from "../../services/config-reloader.ts";
import type { Operator } from "../../services/operator.ts";
import { adminAccountRoutes } from "./accounts.ts";
import { type AdminCredentials, installAdminAuth } from "./admin-auth.ts";
import { adminCreditRoutes } from "./credits.ts";
import { adminKeyRoutes } from "./keys.ts";
import { adminMachineRoutes } from "./machines.ts";
import { adminMailRoutes } from "./mail.ts";
import { adminMetricsRoutes } from "./metrics.ts";
import { adminKnowledgeBaseRoutes, adminModelRoutes } from "./models.ts";
import { operatorApi } from "./operator-api.ts";
import { adminReloadRoutes } from "./reload.ts";
import { adminUsageRoutes } from "./usage.ts";

/**
 * The operator API under `/admin/v1`, registered only when there is a credential to accept: the
 * admin token, or the local one a server writes into its data folder for the `zona` command.
 */
export async function adminRoutes(
  app: FastifyInstance,
  options: AdminCredentials & { operator: Operator; metrics: MetricsRegistry; reloader: ConfigReloader },
) {
  installAdminAuth(app, { adminToken: options.adminToken, localToken: options.localToken });
  const operator = operatorApi(options.operator);
  await app.register(adminAccountRoutes, { operator });
  await app.register(adminKeyRoutes, { operator });
  await app.register(adminCreditRoutes, { operator });
  await app.register(adminMetricsRoutes, { metrics: options.metrics });
  await app.register(adminUsageRoutes, { operator });
  await app.register(adminModelRoutes, { operator });
  await app.register(adminKnowledgeBaseRoutes, { operator });
  await app.register(adminMailRoutes, { operator });
  // The services object outlives reloads; its registry is replaced, so it is read per request.
  await app.register(adminMachineRoutes, {
    engines: () => app.services.engines,
    config: () => app.services.config,
  });
  await app.register(adminReloadRoutes, { reloader: options.reloader });
}
