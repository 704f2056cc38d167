import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import { installKeyLimits } from "../../limits/key-limits.ts";
import type { LimiterDeps } from "../../limits/route-limits.ts";
import type { Services } from "../../services/create-services.ts";
import type { TextGeneration } from "../../services/text/text-generation.ts";
import { audioRoutes } from "./audio.ts";
import { installKeyAuth } from "./key-auth.ts";
import { modelsRoutes } from "./models.ts";
import { isTextRoutes, textRoutes } from "./text-routes.ts";

/**
 * The key API under `/v1`: the key is checked, then the tier and endpoint limits are counted, for
 * every route. Unknown paths fall through to the 404 `unknown_endpoint` handler, unauthenticated
 * and uncounted.
 */
export async function keyApiRoutes(
  app: FastifyInstance,
  options: {
    config: Config;
    services: Services;
    limits: LimiterDeps;
    plugins: FastifyPluginAsync[];
    /** Text generation, embeddings and rerank; the text routes exist only when it is given. */
    text?: TextGeneration;
    catalogue?: Catalogue;
  },
) {
  installKeyAuth(app, options.services.keys);
  installKeyLimits(app, {
    ...options.limits,
    tiers: options.config.tiers,
    defaultTier: options.config.installation.default_tier,
    endpointLimits: options.config.rate_limits.endpoint_limits,
  });
  await app.register(modelsRoutes, { config: options.config });
  // Text routes among the extra plugins (a test's, over a fake service) take the place of the real ones.
  if (options.text && options.catalogue && !options.plugins.some(isTextRoutes)) {
    await app.register(textRoutes({ text: options.text, catalogue: options.catalogue }));
  }
  await app.register(
    audioRoutes({ transcription: options.services.transcription, speech: options.services.speech }),
  );
  for (const plugin of options.plugins) await app.register(plugin);
}
