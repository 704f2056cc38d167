import type { FastifyInstance } from "fastify";
import type { Operator } from "../../services/operator.ts";
import { adminAccountRoutes } from "./accounts.ts";
import { installAdminAuth } from "./admin-auth.ts";
import { adminCreditRoutes } from "./credits.ts";
import { adminKeyRoutes } from "./keys.ts";
import { adminUsageRoutes } from "./usage.ts";

/** The operator API under `/admin/v1`, registered only when an admin token is configured. */
export async function adminRoutes(app: FastifyInstance, options: { adminToken: string; operator: Operator }) {
  installAdminAuth(app, options.adminToken);
  await app.register(adminAccountRoutes, { operator: options.operator });
  await app.register(adminKeyRoutes, { operator: options.operator });
  await app.register(adminCreditRoutes, { operator: options.operator });
  await app.register(adminUsageRoutes, { operator: options.operator });
}
