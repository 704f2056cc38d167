import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { createJobQueue } from "../../src/jobs/create-job-queue.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import { bullQueue, dropJobKeys, QUEUE_KINDS, TEST_REDIS_URL, uniqueJobsPrefix } from "./job-fixtures.ts";

describe("Background jobs: the queue of the configuration", () => {
  it("in the process without server.redis_url, BullMQ with it", async () => {
    const embedded = createJobQueue(parseConfig({}));
    expect(embedded.kind).toBe("in-process");
    await embedded.close();
    const distributed = createJobQueue(parseConfig({ server: { redis_url: "redis://127.0.0.1:1" } }));
    expect(distributed.kind).toBe("bullmq");
    await distributed.close();
  });
});

describe.each(QUEUE_KINDS)("Background jobs: $name queue", (kind) => {
  const opened: JobQueue[] = [];
  let prefix = uniqueJobsPrefix();
  const queue = (options?: { attempts?: number }) => {
    const made = kind.make(prefix, options);
    opened.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((q) => q.close()));
    await dropJobKeys(prefix);
    prefix = uniqueJobsPrefix();
  });

  it("runs each job added with its data (through JSON); idle() resolves once none waits or runs", async () => {
    const q = queue();
    const seen: unknown[] = [];
    q.work<{ n: number; at: string }>("record", async (data) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(data);
    });
    for (let n = 0; n < 5; n++) await q.add("record", { n, at: "x" });
    await q.idle();
    expect(seen).toHaveLength(5);
    expect(seen).toContainEqual({ n: 3, at: "x" });
  });

  it("a job whose id is still waiting or running is not added twice", async () => {
    const q = queue();
    let runs = 0;
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    q.work("once", async () => {
      runs++;
      await gate;
    });
    await q.add("once", {}, { id: "same-id" });
    await q.add("once", {}, { id: "same-id" });
    await q.add("once", {}, { id: "same-id" });
    release();
    await q.idle();
    expect(runs).toBe(1);
  });

  it("a job that throws is run again, up to its attempts", async () => {
    const q = queue({ attempts: 3 });
    let runs = 0;
    q.work("flaky", async () => {
      runs++;
      if (runs < 3) throw new Error("not yet");
    });
    await q.add("flaky", {});
    await q.idle();
    expect(runs).toBe(3);
  });

  it("close() aborts the running jobs' signal and waits for them to end", async () => {
    const q = queue();
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let finished = false;
    q.work("long", async (_data, signal) => {
      started();
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      finished = true;
    });
    await q.add("long", {});
    await running;
    await q.close();
    expect(finished).toBe(true);
  });
});

describe.runIf(TEST_REDIS_URL)("Background jobs: BullMQ across instances", () => {
  const prefix = uniqueJobsPrefix();
  afterEach(() => dropJobKeys(prefix));

  it("a job added by one instance is run by another (the jobs survive the instance that added them)", async () => {
    const adder = bullQueue(prefix);
    // The adder has no worker: it only adds, then goes away.
    await adder.add("hello", { to: "world" }, { id: "job-1" });
    await adder.close();
    const runner = bullQueue(prefix);
    const seen: unknown[] = [];
    runner.work("hello", async (data) => {
      seen.push(data);
    });
    await runner.idle();
    expect(seen).toEqual([{ to: "world" }]);
    await runner.close();
  });

  it("two instances with workers run each job once", async () => {
    const a = bullQueue(prefix);
    const b = bullQueue(prefix);
    const runs: string[] = [];
    a.work<{ n: number }>("count", async (data) => {
      runs.push(`a${data.n}`);
    });
    b.work<{ n: number }>("count", async (data) => {
      runs.push(`b${data.n}`);
    });
    for (let n = 0; n < 20; n++) await (n % 2 === 0 ? a : b).add("count", { n }, { id: `count-${n}` });
    await a.idle();
    expect(runs).toHaveLength(20);
    expect(new Set(runs.map((run) => run.slice(1))).size).toBe(20);
    await Promise.all([a.close(), b.close()]);
  });
});
