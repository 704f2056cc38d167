import type { FastifyInstance } from "fastify";
import type { MetricsRegistry } from "../../metrics/metrics-registry.ts";

/** `GET /admin/v1/metrics`: the process's counters in the Prometheus text format. */
export async function adminMetricsRoutes(
  app: FastifyInstance,
  options: { metrics: MetricsRegistry },
): Promise<void> {
  app.get("/metrics", (_request, reply) =>
    reply.type("text/plain; version=0.0.4; charset=utf-8").send(options.metrics.render()),
  );
}
