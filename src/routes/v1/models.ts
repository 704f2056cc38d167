import type { FastifyInstance } from "fastify";
import type { Config } from "../../config/schema.ts";
import { listedModels } from "../../engines/catalogue.ts";

/** `GET /v1/models`: the served catalogue, every entry with the installation's `owned_by`. Not billed. */
export async function modelsRoutes(app: FastifyInstance, options: { config: Config }): Promise<void> {
  const ownedBy = options.config.installation.owned_by;
  // The catalogue is fixed for the life of the process, so the answer is serialised once.
  const body = JSON.stringify({
    object: "list",
    data: listedModels(options.config).map((model) => ({
      id: model.id,
      object: "model",
      created: model.created,
      owned_by: ownedBy,
    })),
  });
  app.get("/models", (_request, reply) => reply.type("application/json; charset=utf-8").send(body));
}
