import type { UpstreamAttempt, UpstreamObserver } from "../engines/upstream-observer.ts";
import { LabelCache } from "./label-cache.ts";
import type { MetricsRegistry } from "./metrics-registry.ts";

/**
 * Every attempt of the router on a machine, as metrics: `zona_upstream_request_duration_seconds
 * {machine,zone,model,outcome}` (outcome `ok` or the failure's kind) and, for failures,
 * `zona_upstream_errors_total{machine,zone,kind,status}` (status empty unless the machine answered one).
 */
export class UpstreamMetrics implements UpstreamObserver {
  private readonly durations;
  private readonly errors;

  constructor(metrics: MetricsRegistry) {
    const duration = metrics.histogram(
      "zona_upstream_request_duration_seconds",
      "Time until a machine answered (for streams: until the stream began) or failed, per attempt.",
      ["machine", "zone", "model", "outcome"],
    );
    const errors = metrics.counter(
      "zona_upstream_errors_total",
      "Failed attempts on machines, by kind (connect, timeout, status, protocol, aborted) and upstream status.",
      ["machine", "zone", "kind", "status"],
    );
    this.durations = new LabelCache((values) => duration.labels(...values));
    this.errors = new LabelCache((values) => errors.labels(...values));
  }

  attempt(attempt: UpstreamAttempt): void {
    const outcome = attempt.failure?.kind ?? "ok";
    this.durations.get(attempt.machine, attempt.zone, attempt.model, outcome).observe(attempt.ms / 1000);
    if (attempt.failure) {
      this.errors.get(attempt.machine, attempt.zone, outcome, attempt.failure.status ?? "").inc();
    }
  }
}
