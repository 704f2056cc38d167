import type { FastifyInstance } from "fastify";
import { METRICS_CONTENT_TYPE, type MetricsRegistry } from "../../metrics/metrics-registry.ts";

/** `GET /admin/v1/metrics`: the app's metrics in the Prometheus text format, behind the operator token. */
export async function adminMetricsRoutes(
  app: FastifyInstance,
  options: { metrics: MetricsRegistry },
): Promise<void> {
  app.get("/metrics", async (_request, reply) =>
    reply.type(METRICS_CONTENT_TYPE).send(await options.metrics.render()),
  );
}
