import type { Counter, MetricsRegistry } from "../metrics/metrics-registry.ts";

/** The metrics of the rate limits. */
export interface LimitMetrics {
  fallback: Counter;
  refused: Counter;
}

/** Registers (or finds) the rate-limit counters in the registry. */
export function limitMetrics(registry: MetricsRegistry): LimitMetrics {
  return {
    fallback: registry.counter(
      "zona_rate_limit_fallback_total",
      "Rate-limit decisions taken in this process because Redis was unreachable or slow.",
    ),
    refused: registry.counter("zona_rate_limit_refused_total", "Requests refused with 429 by a rate limit."),
  };
}
