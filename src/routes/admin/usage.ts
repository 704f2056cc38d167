import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

/** Usage of the operator API: records and monthly summaries, per key, per account, per month. */
export async function adminUsageRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.get("/usage", (request) => operator.listUsage(request.query));
  app.get("/usage/summary", (request) => operator.usageSummary(request.query));
}
