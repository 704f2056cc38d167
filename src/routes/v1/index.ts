import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config/schema.ts";
import { installKeyLimits } from "../../limits/key-limits.ts";
import type { LimiterDeps } from "../../limits/route-limits.ts";
import type { Services } from "../../services/create-services.ts";
import { installKeyAuth } from "./key-auth.ts";
import { modelsRoutes } from "./models.ts";

/**
 * The key API under `/v1`: the key is checked, then the tier and endpoint limits are counted, for
 * every route. Unknown paths fall through to the 404 `unknown_endpoint` handler, unauthenticated
 * and uncounted.
 */
export async function keyApiRoutes(
  app: FastifyInstance,
  options: { config: Config; services: Services; limits: LimiterDeps; plugins: FastifyPluginAsync[] },
) {
  installKeyAuth(app, options.services.keys);
  installKeyLimits(app, {
    ...options.limits,
    tiers: options.config.tiers,
    defaultTier: options.config.installation.default_tier,
  });
  await app.register(modelsRoutes, { config: options.config });
  for (const plugin of options.plugins) await app.register(plugin);
}
