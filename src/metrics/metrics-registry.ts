import { Gauge, type Metric, Registry } from "prom-client";
import { FastCounter, FastHistogram } from "./fast-metrics.ts";
import { processMetrics } from "./process-metrics.ts";

export type { Gauge } from "prom-client";
/** A counter of the registry. */
export type Counter<L extends string = string> = FastCounter<L>;
/** A histogram of the registry. */
export type Histogram<L extends string = string> = FastHistogram<L>;

/** Buckets of every duration histogram, in seconds: a gateway answers in a millisecond or a minute. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60,
];

/** The Prometheus text format's media type. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/**
 * The metrics of one app: a prom-client Registry of its own (tests build many apps in one
 * process, so prom-client's global registry is never used) that also holds the process's default
 * metrics under their standard names. Metrics made here are registered in it and nowhere else.
 */
export class MetricsRegistry {
  readonly registry = new Registry();

  constructor() {
    for (const metric of processMetrics().getMetricsAsArray()) {
      this.registry.registerMetric(metric as unknown as Metric);
    }
  }

  /** A counter in this registry; names end in `_total`. */
  counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.register(new FastCounter(name, help, labelNames));
  }

  /** A gauge in this registry; `collect` sets it at every scrape. */
  gauge<L extends string = string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    collect: (gauge: Gauge<L>) => void | Promise<void>,
  ): Gauge<L> {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        return collect(this);
      },
    });
  }

  /** A histogram in this registry. */
  histogram<L extends string = string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[] = DURATION_BUCKETS,
  ): Histogram<L> {
    return this.register(new FastHistogram(name, help, labelNames, buckets));
  }

  private register<M extends FastCounter | FastHistogram>(metric: M): M {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(metric.name))
      throw new Error(`invalid metric name: ${metric.name}`);
    this.registry.registerMetric(metric as unknown as Metric);
    return metric;
  }

  /** Every metric in the Prometheus text exposition format (version 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
