import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { DURATION_BUCKETS, MetricsRegistry } from "../../src/metrics/metrics-registry.ts";

/** The exposition of one metric, with its name replaced, so two registries can be compared line by line. */
async function exposition(registry: Registry, name: string): Promise<string> {
  return (await registry.getSingleMetricAsString(name)).replaceAll(name, "m");
}

describe("the hot-path counters and histograms expose exactly what prom-client's own would", () => {
  const observations = [0.0004, 0.001, 0.003, 0.2, 0.2, 7, 61, 0];

  it("a labelled histogram: buckets, +Inf, sum and count per series", async () => {
    const ours = new MetricsRegistry();
    const fast = ours.histogram("zona_fast_seconds", "Help.", ["route", "status"]);
    const reference = new Registry();
    const slow = new Histogram({
      name: "zona_slow_seconds",
      help: "Help.",
      labelNames: ["route", "status"],
      buckets: DURATION_BUCKETS,
      registers: [reference],
    });
    for (const [i, value] of observations.entries()) {
      const status = i % 2 === 0 ? 200 : 502;
      fast.labels("/v1/chat/completions", status).observe(value);
      slow.labels("/v1/chat/completions", String(status)).observe(value);
    }
    expect(await exposition(ours.registry, "zona_fast_seconds")).toBe(
      await exposition(reference, "zona_slow_seconds"),
    );
  });

  it("counters with and without labels, including the label-object form of rare events", async () => {
    const ours = new MetricsRegistry();
    const reference = new Registry();
    const fast = ours.counter("zona_fast_total", "Help.", ["limiter"]);
    const slow = new Counter({
      name: "zona_slow_total",
      help: "Help.",
      labelNames: ["limiter"],
      registers: [reference],
    });
    fast.labels("tier").inc();
    fast.inc({ limiter: "tier" });
    fast.inc({ limiter: "endpoint" }, 3);
    slow.inc({ limiter: "tier" }, 2);
    slow.inc({ limiter: "endpoint" }, 3);
    expect(await exposition(ours.registry, "zona_fast_total")).toBe(
      await exposition(reference, "zona_slow_total"),
    );

    const plain = ours.counter("zona_plain_total", "Help.");
    const plainReference = new Counter({
      name: "zona_plain_ref_total",
      help: "Help.",
      registers: [reference],
    });
    expect(await exposition(ours.registry, "zona_plain_total")).toBe(
      (await exposition(reference, "zona_plain_ref_total")).replaceAll("m_ref", "m"),
    );
    plain.inc(2.5);
    plainReference.inc(2.5);
    expect(plain.value).toBe(2.5);
    expect(() => plain.inc(-1)).toThrow();
  });
});
