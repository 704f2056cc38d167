import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config/schema.ts";
import { type DeferredKeyLimits, installKeyLimits, type KeyLimitSettings } from "../../limits/key-limits.ts";
import type { LimiterDeps } from "../../limits/route-limits.ts";
import type { Services } from "../../services/create-services.ts";
import { audioRoutes } from "./audio.ts";
import { imageRoutes } from "./images.ts";
import { installKeyAuth } from "./key-auth.ts";
import { knowledgeBaseRoutes } from "./knowledge-bases.ts";
import { modelsRoutes } from "./models.ts";
import { textRoutes } from "./text-routes.ts";
import { videoRoutes } from "./videos.ts";

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
    /** Key limits taken with the money hold (money in Redis). */
    deferred?: DeferredKeyLimits;
    plugins: FastifyPluginAsync[];
  },
) {
  // The services are read per request, so a configuration reload reaches the next request.
  const { services } = options;
  installKeyAuth(app, services.keys);
  installKeyLimits(app, {
    ...options.limits,
    settings: () => keyLimitSettings(services.config),
    ...(options.deferred ? { deferred: options.deferred } : {}),
  });
  await app.register(modelsRoutes, { services });
  await app.register(textRoutes, { services });
  await app.register(audioRoutes, { services });
  await app.register(imageRoutes, { services });
  await app.register(videoRoutes, { services });
  await app.register(knowledgeBaseRoutes, { services });
  for (const plugin of options.plugins) await app.register(plugin);
}

const settingsByConfig = new WeakMap<Config, KeyLimitSettings>();

/** The limits of a configuration, made once per configuration (the hot path only looks them up). */
function keyLimitSettings(config: Config): KeyLimitSettings {
  let settings = settingsByConfig.get(config);
  if (!settings) {
    settings = {
      tiers: config.tiers,
      defaultTier: config.installation.default_tier,
      endpointLimits: config.rate_limits.endpoint_limits,
    };
    settingsByConfig.set(config, settings);
  }
  return settings;
}
