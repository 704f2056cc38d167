import type { FastifyInstance } from "fastify";
import { machinesView } from "../../engines/machines-view.ts";
import type { Services } from "../../services/services.ts";

/**
 * `GET /admin/v1/machines`: every machine with its health, errors, load and latency. The registry
 * is read per request, since a configuration reload puts a new one in place.
 */
export async function adminMachineRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.get("/machines", () => {
    const models = services.config.models;
    return machinesView(services.engines, Date.now(), (id) => models.find((model) => model.id === id)?.kind);
  });
}
