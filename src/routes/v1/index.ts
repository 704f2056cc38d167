import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config/schema.ts";
import type { Services } from "../../services/create-services.ts";
import { installKeyAuth } from "./key-auth.ts";
import { modelsRoutes } from "./models.ts";

/** The key API under `/v1`. Unknown paths fall through to the 404 `unknown_endpoint` handler, unauthenticated. */
export async function keyApiRoutes(
  app: FastifyInstance,
  options: { config: Config; services: Services; plugins: FastifyPluginAsync[] },
) {
  installKeyAuth(app, options.services.keys);
  await app.register(modelsRoutes, { config: options.config });
  for (const plugin of options.plugins) await app.register(plugin);
}
