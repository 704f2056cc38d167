/**
 * Video jobs whose machine answers the look at a job with an error (spec "Video job", "Video",
 * "States and transitions"): vLLM-Omni answers a failed job with an error status and the job in the
 * body, which ends the job `failed` at once without blaming the machine; a job whose state cannot
 * be read at all fails after `engines.video_status_unreadable_seconds`, counted from the first
 * failed look since the last good one and kept on the job (so a restarted Zona goes on counting).
 * Fake jobs are moved on by editing their record, time by moving the app's clock.
 */
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { videoJobs } from "../../src/store/schema.ts";
import { FakeModerationServer, FakeVideosServer } from "../fakes/index.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import {
  advance,
  closedSpend,
  engineJob as engineJobOf,
  everyJobEnded,
  finish,
  LONG_JOB_MS,
  SHORT_JOB_MS,
  until,
  VIDEO_UPSTREAM,
} from "./video-helpers.ts";
import { SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const FIVE_SECONDS = (5 * SECOND_MICROS) / 1e6;
const UNREADABLE_SECONDS = 120;
const ENGINES = {
  video_poll_interval_seconds: 0.02,
  video_queue_timeout_seconds: 3_600,
  video_run_timeout_seconds: 1_800,
  video_status_unreadable_seconds: UNREADABLE_SECONDS,
  // A machine that failed is tried again soon (its circuit half-open).
  circuit_cooldown_seconds: 0.1,
  circuit_max_cooldown_seconds: 0.2,
  // Machines are probed by the tests (after a test made one fail), not in the middle of one.
  probe_interval_seconds: 3_600,
  first_byte_timeout_ms: 500,
};
const ENGINE_ERROR = {
  code: "engine_error",
  message: "The machine could not make the video. Nothing was charged.",
};
const SILENT = {
  code: "engine_error",
  message: "The machine stopped answering while making the video; it was stopped. Nothing was charged.",
};
/** A prompt of 2,000 characters of three bytes each: vLLM-Omni's job record repeats it. */
const LONG_PROMPT = "夕暮れの山の湖に霧がかかる、".repeat(143).slice(0, 2_000);

interface Fakes {
  tiVideos: FakeVideosServer;
  zhVideos: FakeVideosServer;
  tiModeration: FakeModerationServer;
  zhModeration: FakeModerationServer;
}

async function startFakes(): Promise<Fakes> {
  const fakes = {
    tiVideos: new FakeVideosServer({ jobMs: SHORT_JOB_MS, models: [VIDEO_UPSTREAM] }),
    zhVideos: new FakeVideosServer({ jobMs: SHORT_JOB_MS, models: [VIDEO_UPSTREAM] }),
    tiModeration: new FakeModerationServer(),
    zhModeration: new FakeModerationServer(),
  };
  await Promise.all(Object.values(fakes).map((fake) => fake.start()));
  return fakes;
}

/** A stack whose only video machine is `ti-videos` (a job that fails there cannot go elsewhere). */
function startStack(
  store: (typeof STORE_KINDS)[number] | Store,
  fakes: Fakes,
  extra: Partial<Parameters<typeof startVideoStack>[0]> = {},
): Promise<VideoStack> {
  return startVideoStack({
    store,
    fakes,
    withoutVideoMachines: true,
    extraMachines: [
      {
        name: "ti-videos",
        zone: "ch-ti",
        protocol: "videos",
        url: fakes.tiVideos.url,
        models: { "wan-2.2-5b-fast": VIDEO_UPSTREAM },
        capacity: 1,
      },
    ],
    config: { engines: ENGINES },
    ...extra,
  });
}

describe.each(
  STORE_KINDS,
)('spec "Video job": a machine answering the look at a job with an error (%s)', (store) => {
  let fakes: Fakes;
  let ti: FakeVideosServer;
  let stack: VideoStack;
  const logs = captureLogs("warn");

  beforeAll(async () => {
    fakes = await startFakes();
    ti = fakes.tiVideos;
    stack = await startStack(store, fakes, { logger: logs.logger });
  });

  afterAll(async () => {
    await stack?.close();
    await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
  });

  // Whatever a test left behind (also when it failed) ends before the next: the machine has one place.
  afterEach(async () => {
    await ti.setMode("normal");
    ti.configure({
      jobMs: SHORT_JOB_MS,
      failMidJob: false,
      failedStatus: undefined,
      statusUnavailable: false,
    });
    for (const job of ti.jobs) finish(job);
    await stack.t.app.services.health.probeAll();
    await everyJobEnded(stack);
    ti.clearRequests();
  });

  const person = () => stack.t.newKey({ key: { monthly_limit: 1 } });
  const get = (id: string, key: string) => stack.call("GET", `/v1/videos/${id}`, { key });
  /** When the job's state first failed to be read since the last good read, as stored. */
  const unreadableSince = async (id: string) => {
    const rows = await stack.t.store.db
      .select({ since: videoJobs.statusUnreadableSince })
      .from(videoJobs)
      .where(eq(videoJobs.id, id));
    return rows[0]?.since ?? undefined;
  };
  /** Nothing charged: nothing held or spent, one record, failed, at no cost. */
  const expectNothingCharged = async (keyId: string) => {
    expect(await closedSpend(stack, keyId)).toMatchObject({ spent: 0, reserved: 0 });
    expect(await stack.usage(keyId)).toMatchObject([{ endpoint: "videos", outcome: "failed", cost: 0 }]);
  };
  /** Creates a job with a long clip and waits until its engine job runs. */
  const running = async (key: string, prompt: string) => {
    ti.configure({ jobMs: LONG_JOB_MS });
    const created = await stack.create({ prompt }, { key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    const { job } = await engineJobOf([ti], prompt);
    advance(job, 20);
    await until("the job to run", async () => {
      const answer = await get(id, key);
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    return { id, job, looks: () => ti.requestsTo(`/v1/videos/${job.id}`).length };
  };
  /** Asks Zona for the job a few times, expecting it still running each time. */
  const stillRunning = async (id: string, key: string) => {
    for (let i = 0; i < 5; i++) {
      expect((await get(id, key)).body.status).toBe("in_progress");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it.each([
    500, 400,
  ])("Video job: vLLM-Omni answering the look at its failed job %i with the job in the body -> failed at that look (not at the run timeout), engine_error, nothing charged; the machine is not blamed and makes the next job (spec Video job: one job at a time per person, so the next is accepted once this one failed)", async (status) => {
    const since = Date.now();
    const firstLine = logs.raw.length;
    const p = await person();
    const { id, job, looks } = await running(p.key, LONG_PROMPT);
    ti.configure({ failedStatus: status });
    const before = looks();
    // The engine runs out of memory halfway.
    job.failMessage = "CUDA out of memory. Tried to allocate 20.00 GiB";
    job.fails = true;
    advance(job, 60);
    const failed = await stack.waitFor(id, undefined, { key: p.key });
    expect(failed).toMatchObject({ status: "failed", error: ENGINE_ERROR });
    // The first look that saw it failed ended it (one more may have been on its way).
    expect(looks() - before).toBeLessThanOrEqual(2);
    expect((await get(id, p.key)).bytes.toString()).not.toMatch(/CUDA|out of memory|GiB/i);
    await expectNothingCharged(p.keyId);

    // The machine answered: no failed attempt, no open circuit.
    const failedAttempts = logs
      .lines()
      .slice(firstLine)
      .filter((line) => line.msg === "upstream attempt failed");
    expect(failedAttempts).toEqual([]);
    const machines = (await stack.t.admin("GET", "/machines")).body.data;
    const view = machines.find((machine: { name: string }) => machine.name === "ti-videos");
    expect(view.state).toBe("up");
    expect(view.last_error === null || Date.parse(view.last_error.at) < since).toBe(true);

    // The next job goes to the same machine and is made.
    ti.configure({ failedStatus: undefined, jobMs: SHORT_JOB_MS });
    const next = await stack.create({ prompt: "a lighthouse on a calm evening" }, { key: p.key });
    expect(next.status, next.bytes.toString()).toBe(200);
    expect((await stack.waitFor(next.body.id, undefined, { key: p.key })).status).toBe("completed");
    expect(ti.jobs.map((made) => made.prompt)).toEqual([LONG_PROMPT, "a lighthouse on a calm evening"]);
  });

  it("Video job: a machine that cannot tell the job's state (503 without a job) for longer than engines.video_status_unreadable_seconds -> failed engine_error, deleted on the machine, nothing charged", async () => {
    const p = await person();
    const { id, job, looks } = await running(p.key, "a clock tower in the fog");
    ti.configure({ statusUnavailable: true });
    const first = await until("the failed look to be noted", () => unreadableSince(id));
    expect(first.getTime()).toBe(stack.clock.at);

    // Just before the time is up, more failed looks change nothing: the first one counts.
    stack.clock.at += (UNREADABLE_SECONDS - 10) * 1000;
    const seen = looks();
    await until("more failed looks", () => looks() >= seen + 3 || undefined);
    await stillRunning(id, p.key);
    expect((await unreadableSince(id))?.getTime()).toBe(first.getTime());

    stack.clock.at += 11_000;
    const failed = await stack.waitFor(id, undefined, { key: p.key });
    expect(failed).toMatchObject({ status: "failed", error: SILENT });
    await until("the engine job to be deleted", () => ti.deletions.includes(job.id));
    await expectNothingCharged(p.keyId);
    // These failed looks blamed the machine, as they should (and as a failed job's look must not).
    const blamed = logs.lines().filter((line) => line.msg === "upstream attempt failed");
    expect(blamed.length).toBeGreaterThan(0);
    expect(blamed[0]).toMatchObject({ machine: "ti-videos", upstream_status: 503 });
  });

  it("Video job: a machine unreachable for less than engines.video_status_unreadable_seconds, then answering again -> the job carries on and completes; a good look starts the count afresh", async () => {
    const p = await person();
    const { id, job } = await running(p.key, "a ferry crossing the lake");
    await ti.setMode("refuse");
    const first = await until("the failed look to be noted", () => unreadableSince(id));
    stack.clock.at += (UNREADABLE_SECONDS - 10) * 1000;
    await stillRunning(id, p.key);

    await ti.setMode("normal");
    await until(
      "a good look to clear the count",
      async () => (await unreadableSince(id)) === undefined || undefined,
    );
    await stillRunning(id, p.key);

    // Unreadable again, past the time counted from the first outage but not from this one.
    stack.clock.at += 20_000;
    ti.configure({ statusUnavailable: true });
    const again = await until("the new failed look to be noted", () => unreadableSince(id));
    expect(again.getTime() - first.getTime()).toBe((UNREADABLE_SECONDS + 10) * 1000);
    await stillRunning(id, p.key);
    ti.configure({ statusUnavailable: false });

    finish(job);
    const done = await stack.waitFor(id, undefined, { key: p.key });
    expect(done).toMatchObject({ status: "completed", error: null });
    expect(await closedSpend(stack, p.keyId)).toMatchObject({ spent: FIVE_SECONDS, reserved: 0 });
    expect(ti.deletions).toEqual([job.id]);
  });
});

describe.each(
  STORE_KINDS,
)('spec "Video job": the time a job\'s state was unreadable survives a restart (%s)', (kind) => {
  it("Video job: failed looks noted by one Zona count for the next on the same database: past engines.video_status_unreadable_seconds it fails at its first failed look", async () => {
    const fakes = await startFakes();
    const store = await openTestStore(kind);
    const clock = { at: Date.now(), now: (): Date => new Date(clock.at) };
    let first: VideoStack | undefined;
    let second: VideoStack | undefined;
    try {
      first = await startStack(store, fakes, { clock });
      const { key, keyId, accountId } = await first.t.newKey({ key: { monthly_limit: 1 } });
      fakes.tiVideos.configure({ jobMs: LONG_JOB_MS });
      const prompt = "a glacier calving into the sea";
      const created = await first.create({ prompt }, { key });
      expect(created.status, created.bytes.toString()).toBe(200);
      const id: string = created.body.id;
      const { job } = await engineJobOf([fakes.tiVideos], prompt);
      await first.waitFor(id, ["in_progress"], { key });
      fakes.tiVideos.configure({ statusUnavailable: true });
      const row = async () =>
        (await store.db.select().from(videoJobs).where(eq(videoJobs.id, id)))[0]?.statusUnreadableSince;
      await until("the failed look to be noted", async () => (await row()) ?? undefined);
      await first.close();
      first = undefined;

      clock.at += (UNREADABLE_SECONDS + 1) * 1000;
      second = await startStack(store, fakes, { clock, existingKey: { key, keyId, accountId } });
      const failed = await second.waitFor(id, undefined, { key });
      expect(failed).toMatchObject({ status: "failed", error: SILENT });
      await until("the engine job to be deleted", () => fakes.tiVideos.deletions.includes(job.id));
      expect(await closedSpend(second, keyId)).toMatchObject({ spent: 0, reserved: 0 });
    } finally {
      await first?.close();
      await second?.close();
      await store.close();
      await Promise.all(Object.values(fakes).map((fake) => fake.close()));
    }
  });
});
