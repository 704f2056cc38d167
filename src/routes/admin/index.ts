import type { FastifyInstance } from "fastify";
import type { MetricsRegistry } from "../../metrics/metrics-registry.ts";
import type { ConfigReloader } from "../../services/config-reloader.ts";
import type { Services } from "../../services/services.ts";
import { adminAccountRoutes } from "./accounts.ts";
import { type AdminCredentials, installAdminAuth } from "./admin-auth.ts";
import { adminCreditRoutes } from "./credits.ts";
import { adminKeyRoutes } from "./keys.ts";
import { adminMachineRoutes } from "./machines.ts";
import { adminMailRoutes } from "./mail.ts";
import { adminMetricsRoutes } from "./metrics.ts";
import { adminKnowledgeBaseRoutes, adminModelRoutes } from "./models.ts";
import { adminReloadRoutes } from "./reload.ts";
import { adminUsageRoutes } from "./usage.ts";

/**
 * The operator API under `/admin/v1`, registered only when there is a credential to accept: the
 * admin token, or the local one a server writes into its data folder for the `zona` command.
 */
export async function adminRoutes(
  app: FastifyInstance,
  options: AdminCredentials & { services: Services; metrics: MetricsRegistry; reloader: ConfigReloader },
) {
  installAdminAuth(app, { adminToken: options.adminToken, localToken: options.localToken });
  const { services } = options;
  await app.register(adminAccountRoutes, { services });
  await app.register(adminKeyRoutes, { services });
  await app.register(adminCreditRoutes, { services });
  await app.register(adminMetricsRoutes, { metrics: options.metrics });
  await app.register(adminUsageRoutes, { services });
  await app.register(adminModelRoutes, { services });
  await app.register(adminKnowledgeBaseRoutes, { services });
  await app.register(adminMailRoutes, { services });
  await app.register(adminMachineRoutes, { services });
  await app.register(adminReloadRoutes, { reloader: options.reloader });
}
