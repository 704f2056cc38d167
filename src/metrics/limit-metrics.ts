import type { Counter, MetricsRegistry } from "./metrics-registry.ts";

/** The limiters a 429 may come from (the `limiter` label). */
export type Limiter = "tier" | "endpoint" | "address" | "user";

/** The metrics of the rate limits. */
export interface LimitMetrics {
  fallback: Counter;
  /** Refusals; increment with `{ limiter }` (see Limiter). */
  refused: Counter<"limiter">;
}

/** Registers the rate-limit counters in the registry. */
export function limitMetrics(registry: MetricsRegistry): LimitMetrics {
  return {
    fallback: registry.counter(
      "zona_rate_limit_fallback_total",
      "Rate-limit decisions taken in this process because Redis was unreachable or slow.",
    ),
    refused: registry.counter(
      "zona_rate_limit_refused_total",
      "Requests refused with 429, by limiter (tier, endpoint, address, user).",
      ["limiter"],
    ),
  };
}
