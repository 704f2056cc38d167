import type { FastifyInstance } from "fastify";
import type { Config } from "../../config/schema.ts";
import { listedModels } from "../../engines/catalogue.ts";
import { modelNotFound, unknownEndpoint } from "../../errors/catalogue.ts";
import type { Services } from "../../services/services.ts";

/** The model objects of one configuration, serialised once. */
interface ServedModels {
  list: string;
  byId: Map<string, string>;
}

/**
 * `GET /v1/models` (the served catalogue, every entry with the installation's `owned_by`) and
 * `GET /v1/models/{id}` (one of them, the SDKs' `models.retrieve`; 404 `model_not_found` for an id
 * that is not listed). Not billed; counted toward the tier limit only. Both follow a configuration
 * reload: the configuration in force is read on every request.
 */
export async function modelsRoutes(app: FastifyInstance, options: { services: Services }): Promise<void> {
  // A reloaded configuration is a new object, so the cache follows it and forgets the old one.
  const cache = new WeakMap<Config, ServedModels>();
  const served = (): ServedModels => {
    const config = options.services.config;
    let models = cache.get(config);
    if (!models) {
      models = serialise(config);
      cache.set(config, models);
    }
    return models;
  };

  app.get("/models", (_request, reply) => reply.type("application/json; charset=utf-8").send(served().list));
  // Catalogue ids may hold '/' (`org/model`), so the id is the rest of the path, whether encoded or not.
  app.get<{ Params: { "*": string } }>("/models/*", (request, reply) => {
    const id = request.params["*"];
    if (id === "") throw unknownEndpoint(request.method, request.url.split("?", 1)[0] ?? "/");
    const model = served().byId.get(id);
    if (model === undefined) throw modelNotFound(id);
    return reply.type("application/json; charset=utf-8").send(model);
  });
}

function serialise(config: Config): ServedModels {
  const ownedBy = config.installation.owned_by;
  const objects = listedModels(config).map((model) => ({
    id: model.id,
    object: "model",
    created: model.created,
    owned_by: ownedBy,
  }));
  return {
    list: JSON.stringify({ object: "list", data: objects }),
    byId: new Map(objects.map((object) => [object.id, JSON.stringify(object)])),
  };
}
