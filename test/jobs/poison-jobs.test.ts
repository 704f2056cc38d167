/**
 * DESIGN.md "Untrusted work": a durable job that kills its worker is counted and ends `failed` after
 * a few such deaths (`server.job_crash_limit`, 2 here); a start never runs it again past that. Over
 * the real queues: the table queue (PGlite, and PostgreSQL with TEST_DATABASE_URL), where a process
 * that dies is a queue whose every later call to the database never arrives; and BullMQ (with
 * TEST_REDIS_URL), where it is a child process killed with SIGKILL mid-run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type JobHooks, runAgainIn } from "../../src/jobs/job-queue.ts";
import { TableQueue, type TableQueueOptions } from "../../src/jobs/table-queue.ts";
import type { Database, Store } from "../../src/store/database.ts";
import { DurableJobsRepository } from "../../src/store/repositories/durable-jobs.ts";
import { durableJobs } from "../../src/store/schema.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import { bullQueue, dropJobKeys, TEST_REDIS_URL, uniqueJobsPrefix } from "./job-fixtures.ts";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const forever = () => new Promise<never>(() => {});

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(10);
  }
}

/** A promise and its resolver. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The table as a process sees it that can die: after `kill()` none of its calls reaches the database again. */
function mortalRepo(db: Database): { repo: DurableJobsRepository; kill(): void } {
  let dead = false;
  const real = new DurableJobsRepository(db);
  const repo = new Proxy(real, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => (dead ? forever() : value.apply(target, args));
    },
  });
  return {
    repo,
    kill: () => {
      dead = true;
    },
  };
}

/** What the capability heard from `onGaveUp`. */
function hookLog<T>(): { calls: Array<{ data: T; deaths: number }>; hooks: JobHooks<T> } {
  const calls: Array<{ data: T; deaths: number }> = [];
  return {
    calls,
    hooks: {
      onGaveUp: async (data, deaths) => {
        calls.push({ data, deaths });
      },
    },
  };
}

describe.each(STORE_KINDS)("Untrusted work: poison jobs of the table queue on %s", (kind) => {
  let store: Store;
  const opened: TableQueue[] = [];
  const queue = (options: Partial<TableQueueOptions> = {}) => {
    const made = new TableQueue({
      repo: new DurableJobsRepository(store.db),
      pollMs: 20,
      backoffMs: 10,
      crashLimit: 2,
      ...options,
    });
    opened.push(made);
    return made;
  };
  /** A process of its own over the table, which the test kills (it is never closed). */
  const mortal = (options: Partial<TableQueueOptions> = {}) => {
    const { repo, kill } = mortalRepo(store.db);
    return { q: new TableQueue({ repo, pollMs: 20, crashLimit: 2, ...options }), kill };
  };
  const rows = () => store.db.select().from(durableJobs);

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((q) => q.close()));
    await store.db.delete(durableJobs);
  });
  afterAll(() => store.close());

  it("Untrusted work: a job whose run killed the process twice is given up at the next start: its hook runs once with the deaths, its handler never again", async () => {
    await store.db.insert(durableJobs).values({ id: "doc-1", name: "read", data: { id: "d1" } });
    for (let death = 1; death <= 2; death++) {
      // A start of the embedded installation (one process owns the data): leases are freed at once.
      const dying = mortal({ sole: true });
      const running = gate();
      dying.q.work("read", async () => {
        running.open();
        return forever();
      });
      await running.opened;
      dying.kill();
      const [row] = await rows();
      expect(row).toMatchObject({ id: "doc-1", deaths: death - 1 });
      expect(row?.runningSince).not.toBeNull();
    }

    const captured = captureLogs("warn");
    const told = hookLog<{ id: string }>();
    let runs = 0;
    const next = queue({ sole: true, log: captured.logger });
    next.work(
      "read",
      async () => {
        runs++;
      },
      told.hooks,
    );
    await next.idle();
    expect(runs).toBe(0);
    expect(told.calls).toEqual([{ data: { id: "d1" }, deaths: 2 }]);
    expect(await rows()).toEqual([]);
    const warnings = captured.lines().filter((line) => line.msg?.includes("given up"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, job: "read", id: "doc-1", deaths: 2 });
  });

  it("Untrusted work: with several processes on one database, a death is counted once the dead process's lease runs out", async () => {
    await store.db.insert(durableJobs).values({ id: "video-1", name: "step", data: "v1" });
    for (let death = 1; death <= 2; death++) {
      const dying = mortal({ leaseMs: 150 });
      const running = gate();
      dying.q.work("step", async () => {
        running.open();
        return forever();
      });
      await running.opened;
      dying.kill();
    }
    const told = hookLog<string>();
    let runs = 0;
    const survivor = queue({ leaseMs: 150 });
    survivor.work(
      "step",
      async () => {
        runs++;
      },
      told.hooks,
    );
    await survivor.idle();
    expect(runs).toBe(0);
    expect(told.calls).toEqual([{ data: "v1", deaths: 2 }]);
  });

  it("Untrusted work: a job that died once runs alone, so a job that ran beside the poison is counted once and then finishes", async () => {
    await store.db.insert(durableJobs).values({ id: "poison", name: "read", data: "poison" });
    await store.db.insert(durableJobs).values({ id: "innocent", name: "read", data: "innocent" });
    // Both run when the poison kills the process the first time.
    const first = mortal({ sole: true, concurrency: 4 });
    const started: string[] = [];
    first.q.work<string>("read", async (data) => {
      started.push(data);
      return forever();
    });
    await until(() => started.length === 2, "both running");
    first.kill();

    // Both died once: each runs alone. The poison comes first and kills the process again.
    const second = mortal({ sole: true, concurrency: 4 });
    const secondStarted: string[] = [];
    second.q.work<string>("read", async (data) => {
      secondStarted.push(data);
      return forever();
    });
    await until(() => secondStarted.length === 1, "the poison running");
    await pause(100);
    expect(secondStarted).toEqual(["poison"]);
    second.kill();

    const told = hookLog<string>();
    const done: string[] = [];
    const next = queue({ sole: true, concurrency: 4 });
    next.work<string>(
      "read",
      async (data) => {
        done.push(data);
      },
      told.hooks,
    );
    await next.idle();
    expect(told.calls).toEqual([{ data: "poison", deaths: 2 }]);
    expect(done).toEqual(["innocent"]);
  });

  it("a run that ends in a way the process sees (done, failed, deferred, cut by a close) counts no death", async () => {
    const q = queue({ attempts: 3 });
    const seen: Array<{ deaths: number | undefined; running: boolean }> = [];
    q.work("ends", async () => {
      const [row] = await rows();
      seen.push({ deaths: row?.deaths, running: row?.runningSince != null });
      if (seen.length === 1) throw new Error("failed once");
      if (seen.length === 2) return runAgainIn(0);
    });
    await q.add("ends", {}, { id: "ends" });
    await q.idle();
    expect(seen).toEqual([
      { deaths: 0, running: true },
      { deaths: 0, running: true },
      { deaths: 0, running: true },
    ]);

    const closing = queue();
    const started = gate();
    closing.work("cut", async (_data, signal) => {
      started.open();
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      throw new Error("cut short");
    });
    await closing.add("cut", {}, { id: "cut" });
    await started.opened;
    await closing.close();
    const [left] = await rows();
    expect(left).toMatchObject({ id: "cut", deaths: 0, runningSince: null });
  });
});

/** A child process running a BullMQ worker over the test Redis, to be killed mid-run. */
class DyingWorker {
  private readonly child: ChildProcess;
  private output = "";

  constructor(prefix: string, lockMs: number, hangs: "run" | "give-up") {
    this.child = spawn(
      process.execPath,
      [
        new URL("./dying-worker.ts", import.meta.url).pathname,
        TEST_REDIS_URL ?? "",
        prefix,
        String(lockMs),
        hangs,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const keep = (chunk: Buffer) => {
      this.output += chunk.toString();
    };
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
  }

  /** Waits until the child printed `line`. */
  async reached(line: string): Promise<void> {
    await until(() => {
      if (this.child.exitCode !== null) throw new Error(`the worker exited:\n${this.output}`);
      return this.output.includes(line);
    }, `'${line}' from the worker`);
  }

  async kill9(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, "exit");
    this.child.kill("SIGKILL");
    await exited;
  }
}

describe.runIf(TEST_REDIS_URL)("Untrusted work: poison jobs of the BullMQ queue", () => {
  // Short locks: a dead worker's job is found stalled within about two of them.
  const LOCK_MS = 400;
  const children: DyingWorker[] = [];
  let prefix = uniqueJobsPrefix();
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill9()));
    await dropJobKeys(prefix);
    prefix = uniqueJobsPrefix();
  });

  /** Runs the job in a child process and kills it there, `times` times. */
  async function killWhileRunning(times: number): Promise<void> {
    for (let death = 1; death <= times; death++) {
      const child = new DyingWorker(prefix, LOCK_MS, "run");
      children.push(child);
      await child.reached("running");
      await child.kill9();
    }
  }

  it("Untrusted work: a job whose run killed its process twice is failed with a reason: its hook runs once, its handler never again", async () => {
    const adder = bullQueue(prefix, { lockMs: LOCK_MS, crashLimit: 2 });
    await adder.add("read", { id: "d1" }, { id: "ingest-d1" });
    await killWhileRunning(2);

    const captured = captureLogs("warn");
    const told = hookLog<{ id: string }>();
    let runs = 0;
    const next = bullQueue(prefix, { lockMs: LOCK_MS, crashLimit: 2, log: captured.logger });
    try {
      next.work(
        "read",
        async () => {
          runs++;
        },
        told.hooks,
      );
      await until(() => told.calls.length > 0, "the hook");
      await next.idle();
      expect(runs).toBe(0);
      expect(told.calls).toEqual([{ data: { id: "d1" }, deaths: 2 }]);
      const job = await bullJob(prefix, "ingest-d1");
      expect(job).toMatchObject({
        state: "failed",
        reason: "given up: its runs ended with the process dead",
      });
      const warnings = captured.lines().filter((line) => line.level >= 40);
      expect(warnings).toEqual([
        expect.objectContaining({ level: 40, job: "read", id: "ingest-d1", deaths: 2 }),
      ]);
    } finally {
      await next.close();
      await adder.close();
    }
  }, 60_000);

  it("Untrusted work: a job whose process died while it was being given up is failed by BullMQ's stall limit, and the hook still runs", async () => {
    const adder = bullQueue(prefix, { lockMs: LOCK_MS, crashLimit: 2 });
    await adder.add("read", { id: "d2" }, { id: "ingest-d2" });
    await killWhileRunning(2);
    const givingUp = new DyingWorker(prefix, LOCK_MS, "give-up");
    children.push(givingUp);
    await givingUp.reached("giving-up 2");
    await givingUp.kill9();

    const told = hookLog<{ id: string }>();
    let runs = 0;
    const next = bullQueue(prefix, { lockMs: LOCK_MS, crashLimit: 2 });
    try {
      next.work(
        "read",
        async () => {
          runs++;
        },
        told.hooks,
      );
      await until(() => told.calls.length > 0, "the hook");
      await next.idle();
      expect(runs).toBe(0);
      expect(told.calls).toEqual([{ data: { id: "d2" }, deaths: 3 }]);
      expect(await bullJob(prefix, "ingest-d2")).toMatchObject({ state: "failed" });
    } finally {
      await next.close();
      await adder.close();
    }
  }, 60_000);
});

/** A job's state and failure reason, read from Redis through BullMQ's own Queue. */
async function bullJob(prefix: string, id: string): Promise<{ state: string; reason: string | undefined }> {
  const { Queue } = await import("bullmq");
  const queue = new Queue("background", { connection: { url: TEST_REDIS_URL }, prefix });
  try {
    const job = await queue.getJob(id);
    return { state: String(await queue.getJobState(id)), reason: job?.failedReason };
  } finally {
    await queue.close();
  }
}
