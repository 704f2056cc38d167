import type { Counter } from "../metrics/metrics-registry.ts";
import type { CounterStore } from "./counter-store.ts";

/** A limit a route declares: the counter it counts toward and the route's own limit per minute. */
export interface RouteLimit {
  /** Routes naming the same counter share it, each comparing the shared count with its own limit. */
  counter: string;
  limit: number;
  /** The endpoint's name in `rate_limits.endpoint_limits`, for limits an operator may change. */
  name?: string;
  /** The endpoint bills its requests (a key with a spending limit holds money for each). */
  pays?: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Key API: counted per API key, together with the tier limit. */
    endpointLimit?: RouteLimit;
    /** Requests with no key or user: counted per client address, 20 times wider from trusted networks. */
    addressLimit?: RouteLimit;
    /** App API: counted per signed-in user (`request.user`). */
    userLimit?: RouteLimit;
  }
}

/** Every rate limit is per minute. */
export const LIMIT_WINDOW_MS = 60_000;

/** What every limiter works with. */
export interface LimiterDeps {
  store: CounterStore;
  /** The app clock. */
  now: () => Date;
  /** Counts the requests refused with 429. */
  refused: Counter;
}
