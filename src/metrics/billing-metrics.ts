import { LabelCache } from "./label-cache.ts";
import type { MetricsRegistry } from "./metrics-registry.ts";

/** Why billing refused a request (402). */
export type BillingRefusal = "spending_limit" | "insufficient_credits";

const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500];

/**
 * What billing adds to the metrics: tokens and cost per model and tier as each request's usage is
 * settled, 402 refusals by reason, and how long usage records wait before they are written.
 */
export class BillingMetrics {
  private readonly currency: string;
  private readonly tokens;
  private readonly cost;
  private readonly refusals;
  private readonly lag;
  private readonly batchSize;
  private readonly inDatabase;

  constructor(metrics: MetricsRegistry, currency: string) {
    this.currency = currency;
    const tokens = metrics.counter(
      "zona_tokens_total",
      "Tokens of settled requests, by catalogue model, service tier and direction (input, output).",
      ["model", "tier", "direction"],
    );
    const cost = metrics.counter(
      "zona_cost_total",
      "What settled requests cost, in the installation's currency (the currency label), by model and tier.",
      ["model", "tier", "currency"],
    );
    const refusals = metrics.counter(
      "zona_billing_refused_total",
      "Requests refused with 402, by reason: spending_limit (the key's monthly limit) or insufficient_credits.",
      ["reason"],
    );
    this.inDatabase = metrics.counter(
      "zona_money_decided_in_database_total",
      "Reservations decided in the database because Redis, which decides them across instances, was unreachable.",
      [],
    );
    this.tokens = new LabelCache((values) => tokens.labels(...values));
    this.cost = new LabelCache((values) => cost.labels(...values));
    this.refusals = new LabelCache((values) => refusals.labels(...values));
    this.lag = metrics.histogram(
      "zona_usage_write_lag_seconds",
      "Time from a request's end (its usage record made) until the record was written to the database.",
      [],
    );
    this.batchSize = metrics.histogram(
      "zona_usage_write_batch_size",
      "Usage records written in one statement by the group commit.",
      [],
      BATCH_BUCKETS,
    );
  }

  /** One request's usage, as settled: `units` as in its usage record, cost in micro-units. */
  settled(model: string | null, tier: string, units: Record<string, number>, costMicros: number): void {
    const id = model ?? "";
    const input = units.input_tokens;
    const output = units.output_tokens;
    if (input !== undefined) this.tokens.get(id, tier, "input").inc(input);
    if (output !== undefined) this.tokens.get(id, tier, "output").inc(output);
    if (costMicros > 0) this.cost.get(id, tier, this.currency).inc(costMicros / 1_000_000);
  }

  refused(reason: BillingRefusal): void {
    this.refusals.get(reason).inc();
  }

  /** A reservation was decided in the database: Redis was away. */
  decidedInDatabase(): void {
    this.inDatabase.inc();
  }

  /** A usage record was written `seconds` after it was made. */
  written(seconds: number): void {
    this.lag.observe(seconds);
  }

  /** The group commit wrote `size` records in one statement. */
  batch(size: number): void {
    this.batchSize.observe(size);
  }
}
