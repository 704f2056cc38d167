import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import { type DeferredKeyLimits, installKeyLimits, type KeyLimitSettings } from "../../limits/key-limits.ts";
import type { LimiterDeps } from "../../limits/route-limits.ts";
import type { Services } from "../../services/create-services.ts";
import type { TextGeneration } from "../../services/text/text-generation.ts";
import { audioRoutes } from "./audio.ts";
import { imageRoutes } from "./images.ts";
import { installKeyAuth } from "./key-auth.ts";
import { knowledgeBaseRoutes } from "./knowledge-bases.ts";
import { modelsRoutes } from "./models.ts";
import { isTextRoutes, textRoutes } from "./text-routes.ts";
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
    /** Text generation, embeddings and rerank; the text routes exist only when it is given. */
    text?: TextGeneration;
    catalogue?: Catalogue;
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
  await app.register(modelsRoutes, { current: () => services.config });
  // Text routes among the extra plugins (a test's, over a fake service) take the place of the real ones.
  if (options.text && options.catalogue && !options.plugins.some(isTextRoutes)) {
    await app.register(
      textRoutes({
        get text() {
          return services.text;
        },
        get catalogue() {
          return services.catalogue;
        },
      }),
    );
  }
  await app.register(
    audioRoutes({
      get transcription() {
        return services.transcription;
      },
      get speech() {
        return services.speech;
      },
    }),
  );
  await app.register(
    imageRoutes({
      get images() {
        return services.images;
      },
    }),
  );
  await app.register(
    videoRoutes({
      get videos() {
        return services.videos;
      },
    }),
  );
  await app.register(
    knowledgeBaseRoutes({
      get knowledgeBases() {
        return services.knowledgeBases;
      },
      get kbAsk() {
        return services.kbAsk;
      },
    }),
  );
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
