import { BillingMetrics } from "./billing-metrics.ts";
import { type LimitMetrics, limitMetrics } from "./limit-metrics.ts";
import { MetricsRegistry } from "./metrics-registry.ts";
import { UpstreamMetrics } from "./upstream-metrics.ts";

/** The metrics of one app, by the layer that records them. */
export interface AppMetrics {
  registry: MetricsRegistry;
  limits: LimitMetrics;
  /** The router's observer: every attempt on a machine. */
  upstream: UpstreamMetrics;
  billing: BillingMetrics;
}

/** A fresh registry with the series of the limits, the router and billing (`currency`: the installation's). */
export function createAppMetrics(currency: string): AppMetrics {
  const registry = new MetricsRegistry();
  return {
    registry,
    limits: limitMetrics(registry),
    upstream: new UpstreamMetrics(registry),
    billing: new BillingMetrics(registry, currency),
  };
}
