import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { EngineRegistry } from "../../src/engines/registry.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import { registerJobMetrics } from "../../src/metrics/job-metrics.ts";
import { registerMachineMetrics } from "../../src/metrics/machine-metrics.ts";
import { MetricsRegistry } from "../../src/metrics/metrics-registry.ts";
import { Scrape } from "./scrape.ts";

const NOW = 1_000_000;

function registryOf(names: string[]): EngineRegistry {
  return new EngineRegistry(
    parseConfig({
      installation: { zones: [{ id: "z" }] },
      models: [{ id: "m", kind: "chat" }],
      machines: names.map((name) => ({
        name,
        zone: "z",
        protocol: "openai",
        url: "http://127.0.0.1:9",
        models: ["m"],
      })),
    }),
  );
}

function queue(waitingCount: JobQueue["waitingCount"]): JobQueue {
  return {
    kind: "bullmq",
    work() {},
    async add() {},
    async idle() {},
    async close() {},
    ...(waitingCount ? { waitingCount } : {}),
  };
}

describe("gauges read at every scrape", () => {
  it("zona_machine_up and zona_machine_in_flight follow the registry in force (a reload replaces it)", async () => {
    const metrics = new MetricsRegistry();
    let current = registryOf(["a", "b"]);
    registerMachineMetrics(
      metrics,
      () => current,
      () => NOW,
    );
    const [a] = current.machines;
    a?.breaker.failure(NOW, true);
    if (a) a.stats.inFlight = 2;
    let s = await Scrape.parse(await metrics.render());
    expect(s.samples("zona_machine_up")).toEqual([
      { labels: { machine: "a", zone: "z", protocol: "openai" }, value: 0 },
      { labels: { machine: "b", zone: "z", protocol: "openai" }, value: 1 },
    ]);
    expect(s.value("zona_machine_in_flight", { machine: "a" })).toBe(2);

    current = registryOf(["c"]);
    s = await Scrape.parse(await metrics.render());
    expect(s.samples("zona_machine_up")).toEqual([
      { labels: { machine: "c", zone: "z", protocol: "openai" }, value: 1 },
    ]);
    expect(s.samples("zona_machine_in_flight")).toEqual([{ labels: { machine: "c" }, value: 0 }]);
  });

  it("zona_jobs_waiting{queue} is the queue's count, and is left out when the queue cannot count", async () => {
    const counted = new MetricsRegistry();
    registerJobMetrics(counted, () => [queue(async () => 7)]);
    expect((await Scrape.parse(await counted.render())).samples("zona_jobs_waiting")).toEqual([
      { labels: { queue: "bullmq" }, value: 7 },
    ]);

    const failing = new MetricsRegistry();
    registerJobMetrics(failing, () => [queue(() => Promise.reject(new Error("Redis is away")))]);
    expect((await Scrape.parse(await failing.render())).samples("zona_jobs_waiting")).toEqual([]);
  });

  it("a scrape does not wait for a count Redis does not give, nor asks again while one is pending", async () => {
    const metrics = new MetricsRegistry();
    let asked = 0;
    let answerFirst: (count: number) => void = () => {};
    registerJobMetrics(metrics, () => [
      queue(() => {
        asked += 1;
        if (asked > 1) return Promise.resolve(3);
        return new Promise<number>((resolve) => {
          answerFirst = resolve;
        });
      }),
    ]);
    expect((await Scrape.parse(await metrics.render())).samples("zona_jobs_waiting")).toEqual([]);
    expect((await Scrape.parse(await metrics.render())).samples("zona_jobs_waiting")).toEqual([]);
    expect(asked).toBe(1);
    answerFirst(5);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await Scrape.parse(await metrics.render())).samples("zona_jobs_waiting")).toEqual([
      { labels: { queue: "bullmq" }, value: 3 },
    ]);
    expect(asked).toBe(2);
  });
});
