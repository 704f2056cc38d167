import type { FastifyInstance } from "fastify";
import type { Operator } from "../../services/operator.ts";

/** Usage of the operator API: records and monthly summaries, per key, per account, per month. */
export async function adminUsageRoutes(app: FastifyInstance, options: { operator: Operator }) {
  const { operator } = options;
  app.get("/usage", (request) => operator.listUsage(request.query));
  app.get("/usage/summary", (request) => operator.usageSummary(request.query));
}
