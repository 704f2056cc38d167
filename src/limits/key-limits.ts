import type { FastifyInstance } from "fastify";
import type { Config, TierName } from "../config/schema.ts";
import { tierRateLimitExceeded } from "../http/errors.ts";
import type { CounterSpec } from "./counter-store.ts";
import { remainingHeaders, routeLimitReached, secondsUntil } from "./limit-headers.ts";
import { LIMIT_WINDOW_MS, type LimiterDeps } from "./route-limits.ts";
import { serviceTierOf } from "./service-tier.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The tier of a key-API request (`X-Service-Tier` or the installation's default). */
    serviceTier: TierName | null;
  }
}

/** The tier table and endpoint limits the key limits read on every request. */
export interface KeyLimitSettings {
  tiers: Config["tiers"];
  defaultTier: TierName;
  /** The operator's changes to the spec's endpoint limits, by endpoint name. */
  endpointLimits?: Record<string, number | undefined>;
}

/**
 * The two limits of every key-API request, both per API key, taken in one atomic step right after
 * the key is checked (so a request without a valid key counts toward none, and a refused one is
 * refused before its body is read): the tier limit (clock minute, limit of the request's own tier)
 * and, when the route declares one, its endpoint limit (window from the first request). A request
 * stopped by either counts toward neither; when both are reached the tier limit answers. A key with
 * its own `requests_per_minute` has that tier limit whatever tier the request asks. The settings
 * are read per request, so a configuration reload holds from the next one.
 */
export function installKeyLimits(
  app: FastifyInstance,
  deps: LimiterDeps & { settings: () => KeyLimitSettings },
): void {
  app.decorateRequest("serviceTier", null);
  app.addHook("onRequest", async (request, reply) => {
    const principal = request.principal;
    if (!principal) return;
    const keyId = principal.keyId;
    const settings = deps.settings();
    const tier = serviceTierOf(request.headers["x-service-tier"], settings.defaultTier);
    request.serviceTier = tier;
    const tierLimit = principal.requestsPerMinute ?? settings.tiers[tier].requests_per_minute;
    const declared = request.routeOptions.config.endpointLimit;
    const changed = declared?.name === undefined ? undefined : settings.endpointLimits?.[declared.name];
    const endpoint = declared && changed !== undefined ? { ...declared, limit: changed } : declared;
    const counters: CounterSpec[] = [
      { key: `tier:${keyId}`, limit: tierLimit, windowMs: LIMIT_WINDOW_MS, kind: "clock" },
    ];
    if (endpoint) {
      counters.push({
        key: `endpoint:${endpoint.counter}:${keyId}`,
        limit: endpoint.limit,
        windowMs: LIMIT_WINDOW_MS,
        kind: "from-first",
      });
    }
    const now = deps.now().getTime();
    const result = await deps.store.take(counters, now);
    if (!result.allowed) {
      if (result.refused === 0 || !endpoint) {
        deps.refused.inc({ limiter: "tier" });
        const ownLimit = principal.requestsPerMinute != null;
        throw tierRateLimitExceeded(tier, tierLimit, secondsUntil(result.resetAt, now), ownLimit);
      }
      deps.refused.inc({ limiter: "endpoint" });
      throw routeLimitReached(endpoint.limit, result.resetAt, now);
    }
    const counted = result.counters[1];
    if (endpoint && counted) reply.headers(remainingHeaders(endpoint.limit, counted.count));
  });
}
