import { afterEach, describe, expect, it } from "vitest";
import { BullMqQueue } from "../../src/jobs/bullmq-queue.ts";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import { TableQueue } from "../../src/jobs/table-queue.ts";
import { registerJobMetrics } from "../../src/metrics/job-metrics.ts";
import { MetricsRegistry } from "../../src/metrics/metrics-registry.ts";
import { DurableJobsRepository } from "../../src/store/repositories/durable-jobs.ts";
import { freePort } from "../helpers/free-port.ts";
import { openTestStore } from "../helpers/test-store.ts";
import { uniqueJobsPrefix } from "../jobs/job-fixtures.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";
import { Scrape } from "./scrape.ts";

async function waiting(queue: JobQueue) {
  const metrics = new MetricsRegistry();
  registerJobMetrics(metrics, () => [queue]);
  return (await Scrape.parse(await metrics.render())).samples("zona_jobs_waiting");
}

describe("zona_jobs_waiting counts the jobs waiting in the real queues", () => {
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  it("in-process: jobs queued and not yet running", async () => {
    const queue = new InProcessQueue();
    closing.push(() => queue.close());
    // No handler yet: the jobs wait.
    for (let i = 0; i < 4; i++) await queue.add("later", { i });
    expect(await waiting(queue)).toEqual([{ labels: { queue: "in-process" }, value: 4 }]);
  });

  it.skipIf(!HAS_REDIS_SERVER)(
    "BullMQ: the shared queue's waiting jobs; left out of the scrape while Redis is away",
    async () => {
      const server = new RedisServerProcess(await freePort());
      await server.start();
      closing.push(() => server.kill());
      const queue = new BullMqQueue({ url: server.url, prefix: uniqueJobsPrefix() });
      closing.push(() => queue.close());
      for (let i = 0; i < 3; i++) await queue.add("later", { i });
      expect(await waiting(queue)).toEqual([{ labels: { queue: "bullmq" }, value: 3 }]);
      await server.kill();
      expect(await waiting(queue)).toEqual([]);
    },
  );

  it("table (the durable jobs of the embedded mode): jobs in the database not yet taken", async () => {
    const store = await openTestStore();
    closing.push(() => store.close());
    const queue = new TableQueue({ repo: new DurableJobsRepository(store.db) });
    closing.push(() => queue.close());
    for (let i = 0; i < 2; i++) await queue.add("later", { i });
    expect(await waiting(queue)).toEqual([{ labels: { queue: "table" }, value: 2 }]);
  });
});
