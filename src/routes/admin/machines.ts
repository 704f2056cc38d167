import type { FastifyInstance } from "fastify";
import type { Config } from "../../config/schema.ts";
import { machinesView } from "../../engines/machines-view.ts";
import type { EngineRegistry } from "../../engines/registry.ts";

/**
 * `GET /admin/v1/machines`: every machine with its health, errors, load and latency. The registry
 * is read per request, since a configuration reload puts a new one in place.
 */
export async function adminMachineRoutes(
  app: FastifyInstance,
  options: { engines: () => EngineRegistry; config: () => Config; now?: () => number },
) {
  const now = options.now ?? Date.now;
  app.get("/machines", () => {
    const models = options.config().models;
    return machinesView(options.engines(), now(), (id) => models.find((model) => model.id === id)?.kind);
  });
}
