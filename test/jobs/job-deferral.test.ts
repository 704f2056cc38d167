import type { FastifyBaseLogger } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import { type JobQueue, jobFailed, runAgainIn } from "../../src/jobs/job-queue.ts";
import { TableQueue } from "../../src/jobs/table-queue.ts";
import { DurableJobsRepository } from "../../src/store/repositories/durable-jobs.ts";
import { durableJobs } from "../../src/store/schema.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { openTestStore } from "../helpers/test-store.ts";
import { bullQueue, dropJobKeys, TEST_REDIS_URL, uniqueJobsPrefix } from "./job-fixtures.ts";

type MakeQueue = (options?: { attempts?: number; log?: FastifyBaseLogger }) => JobQueue;

/** What a queue kind needs around it (a database, a Redis prefix), opened once per kind. */
interface Surroundings {
  make: MakeQueue;
  /** Empties it between tests, once their queues closed. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** Every queue kind. */
const KINDS: Array<{ name: string; open(): Promise<Surroundings> }> = [
  {
    name: "in-process",
    open: async () => ({
      make: (options) => new InProcessQueue({ backoffMs: 10, ...options }),
      reset: async () => {},
      close: async () => {},
    }),
  },
  {
    name: "table",
    open: async () => {
      const store = await openTestStore();
      const repo = new DurableJobsRepository(store.db);
      return {
        make: (options) => new TableQueue({ repo, pollMs: 20, backoffMs: 10, ...options }),
        reset: async () => {
          await store.db.delete(durableJobs);
        },
        close: () => store.close(),
      };
    },
  },
  ...(TEST_REDIS_URL
    ? [
        {
          name: "bullmq",
          open: async (): Promise<Surroundings> => {
            let prefix = uniqueJobsPrefix();
            return {
              make: (options) => bullQueue(prefix, options),
              reset: async () => {
                await dropJobKeys(prefix);
                prefix = uniqueJobsPrefix();
              },
              close: async () => {},
            };
          },
        },
      ]
    : []),
];

describe.each(KINDS)("Background jobs: deferral in the $name queue", (kind) => {
  const opened: JobQueue[] = [];
  let around: Surroundings | undefined;
  const queue: MakeQueue = (options) => {
    if (!around) throw new Error("not opened");
    const made = around.make(options);
    opened.push(made);
    return made;
  };
  beforeAll(async () => {
    around = await kind.open();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((q) => q.close()));
    await around?.reset();
  });
  afterAll(() => around?.close());

  it("a job whose run ends `later` runs again after its delay; idle() waits for it; no attempt counted", async () => {
    const q = queue({ attempts: 1 });
    const runs: number[] = [];
    q.work("step", async () => {
      runs.push(Date.now());
      if (runs.length < 4) return runAgainIn(20);
    });
    await q.add("step", {});
    await q.idle();
    expect(runs).toHaveLength(4);
    // A generous lower bound only: the delay is a minimum.
    expect((runs[3] ?? 0) - (runs[0] ?? 0)).toBeGreaterThanOrEqual(45);
  });

  it("a deferral keeps the failures counted before it", async () => {
    const q = queue({ attempts: 2 });
    let runs = 0;
    q.work("mixed", async () => {
      runs++;
      if (runs === 2) return runAgainIn(5);
      throw new Error("still broken");
    });
    await q.add("mixed", {});
    await q.idle();
    // Failed, deferred, failed: two failures are the two attempts; a fourth run would mean the
    // deferral had forgotten the first failure, a second-run stop that it had counted as one.
    expect(runs).toBe(3);
  });

  it("a job whose run ends `failed` is not run again, though attempts remain; one info line names why", async () => {
    const captured = captureLogs("info");
    const q = queue({ attempts: 3, log: captured.logger });
    let runs = 0;
    q.work("doomed", async () => {
      runs++;
      return jobFailed("the file cannot be read");
    });
    await q.add("doomed", { secret: "the user's own words" }, { id: "doomed-1" });
    await q.idle();
    const ended = () => captured.lines().filter((line) => line.msg === "background job ended failed");
    await vi.waitFor(() => expect(ended()).toHaveLength(1));
    expect(ended()[0]).toMatchObject({ level: 30, job: "doomed", reason: "the file cannot be read" });
    expect(runs).toBe(1);
    expect(captured.lines().filter((line) => line.level >= 40)).toEqual([]);
    expect(captured.raw.join("\n")).not.toContain("the user's own words");
    // Ended, not waiting: the same id may be queued again, and runs.
    await q.add("doomed", {}, { id: "doomed-1" });
    await q.idle();
    expect(runs).toBe(2);
  });

  it("a job added with delayMs waits for its time, counted as waiting meanwhile", async () => {
    const q = queue();
    let ranAt = 0;
    q.work("later", async () => {
      ranAt = Date.now();
    });
    const addedAt = Date.now();
    await q.add("later", {}, { delayMs: 60 });
    expect(await q.waitingCount?.()).toBe(1);
    await q.idle();
    expect(ranAt - addedAt).toBeGreaterThanOrEqual(50);
  });

  it("the id of a job that failed for good may be queued again", async () => {
    const q = queue({ attempts: 1 });
    let runs = 0;
    q.work("broken", async () => {
      runs++;
      throw new Error("no");
    });
    await q.add("broken", {}, { id: "broken-1" });
    await q.idle();
    await q.add("broken", {}, { id: "broken-1" });
    await q.idle();
    expect(runs).toBe(2);
  });
});

describe("Background jobs: deferral in the in-process queue, at close", () => {
  it("close() drops the jobs waiting for their time, and the ones deferred while closing", async () => {
    const q = new InProcessQueue();
    let runs = 0;
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    q.work("step", async (_data, signal) => {
      runs++;
      started();
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      return runAgainIn(0);
    });
    await q.add("step", {}, { delayMs: 600_000 });
    await q.add("step", {});
    await running;
    // Resolves at once rather than after the delayed job's ten minutes or the deferral's re-run.
    await q.close();
    expect(runs).toBe(1);
    expect(q.waitingCount()).toBe(0);
    await q.idle();
  });
});
