import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config, TierName } from "../config/schema.ts";
import { type ApiError, tierRateLimitExceeded } from "../errors/catalogue.ts";
import type { CounterSpec, TakeResult } from "./counter-store.ts";
import type { DeferredTakes, PendingTake } from "./deferred-takes.ts";
import { KnownCounts } from "./known-counts.ts";
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
  /** The operator's changes to the built-in endpoint limits (ENDPOINT_LIMITS), by endpoint name. */
  endpointLimits?: Record<string, number | undefined>;
}

/** Key limits taken with the money hold (distributed mode with money in Redis). */
export interface DeferredKeyLimits {
  takes: DeferredTakes;
  /** Whether requests of this key hold money (a monthly limit, or a prepaid installation). */
  holdsMoney: (principal: { monthlyLimitMicros: number | null }) => boolean;
  /** Renders an error in place of an answer about to be sent (status, headers; the body it returns). */
  replaceWith: (request: FastifyRequest, reply: FastifyReply, error: ApiError) => string;
}

/**
 * The two limits of every key-API request, both per API key, taken in one atomic step right after
 * the key is checked (so a request without a valid key counts toward none, and a refused one is
 * refused before its body is read): the tier limit (clock minute, limit of the request's own tier)
 * and, when the route declares one, its endpoint limit (window from the first request). A request
 * stopped by either counts toward neither; when both are reached the tier limit answers. A key with
 * its own `requests_per_minute` has that tier limit whatever tier the request asks. The settings
 * are read per request, so a configuration reload holds from the next one.
 *
 * With `deferred`, a request of an endpoint that pays, from a key that holds money, is counted in
 * the money hold's own script call instead (one Redis call, not two) while this process last saw
 * the key's counters far from their limits; it is still counted before anything answers it.
 */
export function installKeyLimits(
  app: FastifyInstance,
  deps: LimiterDeps & { settings: () => KeyLimitSettings; deferred?: DeferredKeyLimits },
): void {
  const known = new KnownCounts();
  const deferred = deps.deferred;
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
    const take = new KeyTake(counters, known, (result, now) => {
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
    const now = deps.now().getTime();
    if (deferred && endpoint?.pays && deferred.holdsMoney(principal) && known.farFromLimits(counters, now)) {
      deferred.takes.defer(request.id, take, reply.raw);
      return;
    }
    take.apply(await deps.store.take(counters, now), now);
  });
  if (!deferred) return;
  // A success that never held money (no take came with it): counted before it goes, or a 429 instead.
  app.addHook("onSend", (request, reply, payload, done) => {
    if (!deferred.takes.has(request.id)) return done(null, payload);
    deferred.takes.before(request.id).then(
      (limited) => done(null, limited ? deferred.replaceWith(request, reply, limited) : payload),
      (error: unknown) => done(error as Error),
    );
  });
}

/** A request's key counters and what their outcome does; remembers what it saw. */
class KeyTake implements PendingTake {
  readonly counters: CounterSpec[];
  private readonly known: KnownCounts;
  private readonly outcome: (result: TakeResult, now: number) => void;
  done = false;

  constructor(
    counters: CounterSpec[],
    known: KnownCounts,
    outcome: (result: TakeResult, now: number) => void,
  ) {
    this.counters = counters;
    this.known = known;
    this.outcome = outcome;
  }

  apply(result: TakeResult, now: number): void {
    this.done = true;
    this.known.saw(this.counters, result);
    this.outcome(result, now);
  }
}
