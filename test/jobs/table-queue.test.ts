import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { createDurableQueue, createJobQueue } from "../../src/jobs/create-job-queue.ts";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import { runAgainIn } from "../../src/jobs/job-queue.ts";
import { TableQueue, type TableQueueOptions } from "../../src/jobs/table-queue.ts";
import type { Store } from "../../src/store/database.ts";
import { type ClaimedJob, DurableJobsRepository } from "../../src/store/repositories/durable-jobs.ts";
import { durableJobs } from "../../src/store/schema.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The time between each two runs. */
const gaps = (times: number[]) => times.slice(1).map((time, i) => time - (times[i] ?? time));

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await pause(10);
}

/** A promise and its resolver, to hold a handler where the test wants it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

describe.each(STORE_KINDS)("Background jobs: the table queue on %s", (kind) => {
  let store: Store;
  let repo: DurableJobsRepository;
  const opened: TableQueue[] = [];
  /** A queue on the test database; short waits so that tests do not sleep. */
  const queue = (options: Partial<TableQueueOptions> = {}) => {
    const made = new TableQueue({ repo, pollMs: 20, backoffMs: 10, ...options });
    opened.push(made);
    return made;
  };
  const rows = () => store.db.select().from(durableJobs);

  beforeAll(async () => {
    store = await openTestStore(kind);
    repo = new DurableJobsRepository(store.db);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((q) => q.close()));
    await store.db.delete(durableJobs);
  });
  afterAll(() => store.close());

  it("runs each job once with its data (through JSON) and deletes it; idle() waits for all", async () => {
    const q = queue();
    const seen: unknown[] = [];
    q.work<{ n: number }>("record", async (data) => {
      await pause(5);
      seen.push(data);
    });
    for (let n = 0; n < 6; n++) await q.add("record", { n, nested: { at: "x" }, gone: undefined });
    await q.add("record", "42");
    await q.idle();
    expect(seen).toHaveLength(7);
    expect(seen).toContainEqual({ n: 4, nested: { at: "x" } });
    // A string that reads as JSON stays a string.
    expect(seen).toContain("42");
    expect(await rows()).toEqual([]);
  });

  it("a job whose id is waiting or running is not added twice; once done, the id is free again", async () => {
    const q = queue();
    let runs = 0;
    const held = gate();
    q.work("once", async () => {
      runs++;
      await held.opened;
    });
    await q.add("once", {}, { id: "same-id" });
    await until(() => runs === 1);
    await q.add("once", {}, { id: "same-id" });
    await q.add("once", {}, { id: "same-id" });
    expect(await rows()).toHaveLength(1);
    held.open();
    await q.idle();
    expect(runs).toBe(1);
    await q.add("once", {}, { id: "same-id" });
    await q.idle();
    expect(runs).toBe(2);
  });

  it("a deferred job runs again after its delay without counting an attempt", async () => {
    const q = queue({ attempts: 1 });
    const runs: number[] = [];
    q.work("step", async () => {
      runs.push(Date.now());
      if (runs.length < 4) return runAgainIn(30);
    });
    await q.add("step", {});
    await q.idle();
    expect(runs).toHaveLength(4);
    // The database's clock and this one are the same machine's: a generous lower bound only.
    for (const gap of gaps(runs)) expect(gap).toBeGreaterThanOrEqual(20);
  });

  it("a job that throws is retried with a doubling backoff, then dropped with one error line", async () => {
    const captured = captureLogs("warn");
    const q = queue({ attempts: 3, backoffMs: 40, log: captured.logger });
    const runs: number[] = [];
    q.work("flaky", async () => {
      runs.push(Date.now());
      throw new Error("engine said no");
    });
    await q.add("flaky", { secret: "the user's own words" }, { id: "flaky-1" });
    await q.idle();
    expect(runs).toHaveLength(3);
    const [first = 0, second = 0] = gaps(runs);
    expect(first).toBeGreaterThanOrEqual(30);
    expect(second).toBeGreaterThanOrEqual(70);
    expect(await rows()).toEqual([]);
    const errors = captured.lines().filter((line) => line.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      msg: "background job failed",
      job: "flaky",
      id: "flaky-1",
      attempts: 3,
    });
    expect(captured.raw.join("\n")).not.toContain("the user's own words");
  });

  it("a job added with delayMs waits for its time, and counts as waiting until then", async () => {
    const q = queue();
    const ran: string[] = [];
    q.work<string>("later", async (data) => {
      ran.push(data);
    });
    await q.add("later", "far", { delayMs: 60_000 });
    await q.add("later", "soon", { delayMs: 30 });
    await until(() => ran.length === 1);
    await pause(50);
    expect(ran).toEqual(["soon"]);
    expect(await q.waitingCount()).toBe(1);
  });

  it("a job held by a process that died is taken by another once its lease runs out", async () => {
    await repo.add({ id: "orphan", name: "resume", data: { n: 1 } });
    // The dead process: it claimed the job with a short lease, then never wrote again.
    const dead = await repo.claim(["resume"], 150);
    if (dead?.id !== "orphan") throw new Error("the dead process claimed nothing");
    const q = queue({ leaseMs: 150 });
    const running = gate();
    const release = gate();
    q.work("resume", async () => {
      running.open();
      await release.opened;
    });
    await running.opened;
    // The first claim's late writes must not touch the second's run.
    expect(await repo.finish(dead)).toBe(false);
    expect(await repo.defer(dead, 0)).toBe(false);
    expect(await rows()).toHaveLength(1);
    release.open();
    await q.idle();
    expect(await rows()).toEqual([]);
  });

  it("a graceful close leaves unfinished jobs for the next start, without counting an attempt", async () => {
    const first = queue();
    const started = gate();
    first.work<string>("video", async (data, signal) => {
      started.open();
      await aborted(signal);
      // A step cut by the shutdown asks to be run again; anything else thrown is released as it was.
      if (data === "defers") return runAgainIn(0);
      throw new Error("cut short");
    });
    await first.add("video", "defers", { id: "a" });
    await first.add("video", "throws", { id: "b" });
    await first.add("video", "later", { id: "c", delayMs: 40 });
    await started.opened;
    await until(async () => (await rows()).filter((row) => row.lockedUntil !== null).length >= 2);
    await first.close();
    await expect(first.add("video", "x")).rejects.toThrow(/closed/);
    const left = await rows();
    expect(left.map((row) => row.id).sort()).toEqual(["a", "b", "c"]);
    expect(left.every((row) => row.attempts === 0 && row.lockedUntil === null)).toBe(true);

    const next = queue();
    const done: string[] = [];
    next.work<string>("video", async (data) => {
      done.push(data);
    });
    await next.idle();
    expect(done.sort()).toEqual(["defers", "later", "throws"]);
  });

  it("renewing the lease keeps a long job from being taken by another worker", async () => {
    const a = queue({ leaseMs: 120 });
    const b = queue({ leaseMs: 120 });
    let runs = 0;
    const long = async () => {
      runs++;
      // Five leases long.
      await pause(600);
    };
    a.work("long", long);
    await a.add("long", {});
    await until(() => runs === 1);
    b.work("long", long);
    await a.idle();
    await b.idle();
    expect(runs).toBe(1);
  });

  it("a worker whose renewal came after its lease ran out is told (signal aborted) and writes nothing back", async () => {
    /** A stalled process: its renewals reach the database long after they were due. */
    class LateRenewals extends DurableJobsRepository {
      override async renew(job: ClaimedJob, leaseMs: number) {
        await pause(250);
        return super.renew(job, leaseMs);
      }
    }
    const captured = captureLogs("warn");
    // One at a time: the stalled worker must not claim the job a second time itself.
    const stalled = queue({
      repo: new LateRenewals(store.db),
      leaseMs: 90,
      concurrency: 1,
      log: captured.logger,
    });
    const runs: string[] = [];
    let stalledAborted = false;
    stalled.work("job", async (_data, signal) => {
      runs.push("stalled");
      await aborted(signal);
      stalledAborted = true;
      throw new Error("cut short");
    });
    await stalled.add("job", {}, { id: "j" });
    await until(() => runs.length === 1);
    const healthy = queue({ leaseMs: 90 });
    const release = gate();
    healthy.work("job", async () => {
      runs.push("healthy");
      await release.opened;
    });
    await until(() => stalledAborted && runs.length === 2);
    await until(() => captured.lines().some((line) => line.msg?.includes("lease lost")));
    // The stalled run's failure was not counted, nor its lease released: the row is the healthy run's.
    const [row] = await rows();
    expect(row).toMatchObject({ id: "j", attempts: 0 });
    expect(row?.lockedUntil).not.toBeNull();
    release.open();
    await healthy.idle();
    expect(runs).toEqual(["stalled", "healthy"]);
  });

  it("two queues on one database never run the same job at once, and run each once", async () => {
    const a = queue({ concurrency: 3 });
    const b = queue({ concurrency: 3 });
    const active = new Map<number, number>();
    const runs: number[] = [];
    let overlaps = 0;
    const handler = async (data: { n: number }) => {
      const now = (active.get(data.n) ?? 0) + 1;
      active.set(data.n, now);
      if (now > 1) overlaps++;
      runs.push(data.n);
      await pause(5);
      active.set(data.n, now - 1);
    };
    a.work("count", handler);
    b.work("count", handler);
    for (let n = 0; n < 30; n++) await (n % 2 === 0 ? a : b).add("count", { n }, { id: `count-${n}` });
    await a.idle();
    await b.idle();
    expect(overlaps).toBe(0);
    expect(runs).toHaveLength(30);
    expect(new Set(runs).size).toBe(30);
  });

  it("jobs of a name this process has no handler for stay for a process that has one", async () => {
    const videos = queue();
    videos.work("video", async () => {});
    await videos.add("ingest", { doc: 1 });
    await videos.idle();
    expect(await rows()).toHaveLength(1);
    const ingest = queue();
    let ingested = 0;
    ingest.work("ingest", async () => {
      ingested++;
    });
    await ingest.idle();
    expect(ingested).toBe(1);
  });

  it("waitingCount() counts the jobs no worker holds", async () => {
    const q = queue();
    const held = gate();
    q.work("hold", () => held.opened);
    await q.add("hold", {});
    await q.add("other", {});
    await q.add("other", {}, { delayMs: 60_000 });
    await until(async () => (await q.waitingCount()) === 2);
    held.open();
  });
});

describe("Background jobs: the durable queue of the configuration", () => {
  it("a table queue over the store in embedded mode, the BullMQ queue itself when there is one", async () => {
    const store = await openTestStore();
    const config = parseConfig({});
    const jobs = new InProcessQueue();
    const durable = createDurableQueue(config, store, jobs, undefined, { pollMs: 20 });
    expect(durable.kind).toBe("table");
    const ran: unknown[] = [];
    durable.work("x", async (data) => {
      ran.push(data);
    });
    await durable.add("x", { y: 1 });
    await durable.idle();
    expect(ran).toEqual([{ y: 1 }]);
    await durable.close();
    await jobs.close();

    const bull = createJobQueue(parseConfig({ server: { redis_url: "redis://127.0.0.1:1" } }));
    expect(createDurableQueue(config, store, bull)).toBe(bull);
    await bull.close();
    await store.close();
  });
});
