/**
 * Video jobs over real HTTP (spec "Video job", "Video", "States and transitions"): the life of a
 * job on two fake video machines (zones ch-ti and ch-zh, one place each), failures, failover,
 * capacity, deletion, the one-job rule, timeouts and the 7 days. Fake jobs are moved on by
 * editing their record (`createdAt`, `jobMs`), timeouts by moving the app's clock: nothing waits
 * for a fixed time.
 */
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { videoJobs } from "../../src/store/schema.ts";
import { FakeModerationServer, FakeVideosServer } from "../fakes/index.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import {
  advance,
  closedSpend,
  engineJob as engineJobOf,
  everyJobEnded,
  finish,
  keySpend,
  LONG_JOB_MS,
  SHORT_JOB_MS,
  until,
  VIDEO_UPSTREAM,
} from "./video-helpers.ts";
import { SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const DAY_MS = 24 * 3600_000;
/** Five seconds of video at 0.02 per second. */
const FIVE_SECONDS = (5 * SECOND_MICROS) / 1e6;
const ENGINES = {
  video_poll_interval_seconds: 0.02,
  video_queue_timeout_seconds: 3_600,
  video_run_timeout_seconds: 1_800,
  // A machine that was down is tried again soon after it is back.
  circuit_cooldown_seconds: 0.1,
  circuit_max_cooldown_seconds: 0.2,
  // Machines are probed by the tests (after a test made one fail), not in the middle of one.
  probe_interval_seconds: 3_600,
  // A machine that hangs is given up this soon for the next (each call to a video machine is short).
  first_byte_timeout_ms: 500,
};

describe.each(
  STORE_KINDS,
)('spec "Video job" and "States and transitions": the life of a video job (%s)', (store) => {
  let stack: VideoStack;
  let ti: FakeVideosServer;
  let zh: FakeVideosServer;
  let tiModeration: FakeModerationServer;
  let zhModeration: FakeModerationServer;

  beforeAll(async () => {
    ti = new FakeVideosServer({ jobMs: SHORT_JOB_MS, models: [VIDEO_UPSTREAM] });
    zh = new FakeVideosServer({ jobMs: SHORT_JOB_MS, models: [VIDEO_UPSTREAM] });
    tiModeration = new FakeModerationServer();
    zhModeration = new FakeModerationServer();
    await Promise.all([ti, zh, tiModeration, zhModeration].map((server) => server.start()));
    const machine = (name: string, zone: string, url: string) => ({
      name,
      zone,
      protocol: "videos",
      url,
      models: { "wan-2.2-5b-fast": VIDEO_UPSTREAM },
      capacity: 1,
    });
    stack = await startVideoStack({
      store,
      fakes: { tiVideos: ti, zhVideos: zh, tiModeration, zhModeration },
      withoutVideoMachines: true,
      extraMachines: [machine("ti-videos", "ch-ti", ti.url), machine("zh-videos", "ch-zh", zh.url)],
      config: { engines: ENGINES },
    });
  });

  afterAll(async () => {
    await stack?.close();
    await Promise.all([ti, zh, tiModeration, zhModeration].map((server) => server?.close()));
  });

  beforeEach(() => {
    ti.clearRequests();
    zh.clearRequests();
  });

  // Whatever a test left behind (also when it failed) ends before the next: the machines have one place each.
  afterEach(async () => {
    for (const fake of [ti, zh]) {
      await fake.setMode("normal");
      fake.configure({ jobMs: SHORT_JOB_MS, failMidJob: false, garbageContent: false, clip: undefined });
      for (const job of fake.jobs) finish(job);
    }
    // A machine that failed is ranked last until it answers again: the probe tells.
    await stack.t.app.services.health.probeAll();
    await everyJobEnded(stack);
  });

  const both = (settings: Parameters<FakeVideosServer["configure"]>[0]) => {
    ti.configure(settings);
    zh.configure(settings);
  };
  const person = (monthlyLimit = 1) => stack.t.newKey({ key: { monthly_limit: monthlyLimit } });
  /** The engine job made for a prompt, on whichever machine. */
  const engineJob = (prompt: string) => engineJobOf([ti, zh], prompt);
  const get = (id: string, key: string) => stack.call("GET", `/v1/videos/${id}`, { key });
  const spend = (keyId: string) => keySpend(stack, keyId);
  const closed = (keyId: string) => closedSpend(stack, keyId);
  /** Nothing charged: nothing held or spent, no record with a cost, none that says it delivered. */
  const expectNothingCharged = async (keyId: string) => {
    expect(await closed(keyId)).toMatchObject({ spent: 0, reserved: 0 });
    const records = await stack.usage(keyId);
    expect(records.filter((record: { cost: number }) => record.cost !== 0)).toEqual([]);
    expect(records.filter((record: { outcome: string }) => record.outcome === "ok")).toEqual([]);
  };
  /** The usage records of a key once its job's money is closed. */
  const usageOf = async (keyId: string) => {
    await closed(keyId);
    return stack.usage(keyId);
  };

  it("a job goes queued -> in_progress (progress rising) -> completed, kept 7 days; the engine gets the upstream model, prompt, size, 5 s, 24 fps, 121 frames and the seed", async () => {
    const p = await person();
    both({ jobMs: LONG_JOB_MS });
    const prompt = "a red kite over a mountain lake";
    const created = await stack.create({ prompt, size: "704x1280", seed: 4242 }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    expect(created.body).toMatchObject({
      object: "video",
      status: "queued",
      progress: 0,
      completed_at: null,
      expires_at: null,
      error: null,
      model: "wan-2.2-5b-fast",
      prompt,
      seconds: "5",
      size: "704x1280",
    });
    const id: string = created.body.id;
    const { fake, job } = await engineJob(prompt);
    expect(job).toMatchObject({
      model: VIDEO_UPSTREAM,
      prompt,
      size: "704x1280",
      seconds: 5,
      fps: 24,
      frames: 121,
      seed: 4242,
    });

    const seen: Array<{ status: string; progress: number }> = [];
    const reaching = (percent: number) =>
      until(`progress ${percent}`, async () => {
        const answer = await get(id, p.key);
        expect(answer.status).toBe(200);
        seen.push({ status: answer.body.status, progress: answer.body.progress });
        return answer.body.status === "in_progress" && answer.body.progress >= percent
          ? answer.body
          : undefined;
      });
    await reaching(0);
    advance(job, 30);
    const early = await reaching(30);
    advance(job, 70);
    const late = await reaching(70);
    expect(late.progress).toBeGreaterThan(early.progress);
    expect(late.progress).toBeLessThan(100);
    expect(late).toMatchObject({ completed_at: null, expires_at: null, error: null });

    stack.clock.at += 90_000;
    finish(job);
    const done = await stack.waitFor(id, ["completed", "failed"], { key: p.key });
    expect(done).toMatchObject({ status: "completed", progress: 100, error: null, seconds: "5" });
    expect(done.completed_at).toBe(created.body.created_at + 90);
    expect(done.expires_at).toBe(done.completed_at + 7 * 24 * 3600);

    // Progress never went back and the states came in order.
    const rank = ["queued", "in_progress", "completed"];
    seen.forEach((after, i) => {
      const before = seen[i - 1] ?? after;
      expect(rank.indexOf(after.status)).toBeGreaterThanOrEqual(rank.indexOf(before.status));
      expect(after.progress).toBeGreaterThanOrEqual(before.progress);
    });
    // The engine's copy is not kept once the clip is delivered.
    await until("the engine copy to be deleted", () => fake.deletions.includes(job.id));
  });

  it("the engine gets no seed when none is given, and the default size", async () => {
    const p = await person();
    const prompt = "a paper boat on a stream";
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const { job } = await engineJob(prompt);
    expect(job.seed).toBeUndefined();
    expect(job).toMatchObject({ model: VIDEO_UPSTREAM, size: "1280x704", seconds: 5, fps: 24, frames: 121 });
    expect((await stack.waitFor(created.body.id, undefined, { key: p.key })).status).toBe("completed");
  });

  it("an engine failing mid-job: failed with an error of our own (not the engine's words), nothing charged, and a new job at once", async () => {
    const p = await person();
    both({ failMidJob: true, failMessage: "CUDA out of memory. Tried to allocate 20.00 GiB", jobMs: 200 });
    const created = await stack.create({ prompt: "a lighthouse in a storm" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const failed = await stack.waitFor(created.body.id, undefined, { key: p.key });
    expect(failed.status).toBe("failed");
    expect(failed.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(failed.error.message.length).toBeGreaterThan(0);
    const shown = [
      (await get(created.body.id, p.key)).bytes.toString(),
      (await stack.call("GET", "/v1/videos", { key: p.key })).bytes.toString(),
      (await stack.call("GET", `/v1/videos/${created.body.id}/content`, { key: p.key })).bytes.toString(),
    ].join("\n");
    expect(shown).not.toMatch(/CUDA|out of memory|GiB/i);
    expect(
      (await stack.call("GET", `/v1/videos/${created.body.id}/content`, { key: p.key })).status,
    ).not.toBe(200);
    await expectNothingCharged(p.keyId);

    both({ failMidJob: false, jobMs: SHORT_JOB_MS });
    const next = await stack.create({ prompt: "a lighthouse on a calm evening" }, { key: p.key });
    expect(next.status, next.bytes.toString()).toBe(200);
    expect((await stack.waitFor(next.body.id, undefined, { key: p.key })).status).toBe("completed");
  });

  it("an engine sending something that is not an MP4: failed, nothing charged", async () => {
    const p = await person();
    both({ garbageContent: true });
    const created = await stack.create({ prompt: "a snail on a leaf" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const failed = await stack.waitFor(created.body.id, undefined, { key: p.key });
    expect(failed).toMatchObject({ status: "failed", error: { code: expect.any(String) } });
    expect(failed.error.message).not.toMatch(/html/i);
    await expectNothingCharged(p.keyId);
  });

  /**
   * Puts zh-videos after ti-videos in the order machines are tried (idle machines otherwise take
   * turns): its probe has just failed, and its cool-down is over, so it is tried, but second.
   */
  const zhTriedSecond = async () => {
    await zh.setMode("refuse");
    await stack.t.app.services.health.probeAll();
    await zh.setMode("normal");
    await until("the cool-down of zh-videos to end", async () => {
      const machines = (await stack.t.admin("GET", "/machines")).body.data;
      const view = machines.find((m: { name: string }) => m.name === "zh-videos");
      return (view.state !== "up" && view.until === null) || undefined;
    });
  };

  /** A job made while ti-videos fails is made by zh-videos, and charged once. */
  const failover = async (prompt: string) => {
    const p = await person();
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    expect((await stack.waitFor(created.body.id, undefined, { key: p.key })).status).toBe("completed");
    expect((await engineJob(prompt)).fake).toBe(zh);
    expect(ti.jobs).toEqual([]);
    expect(await usageOf(p.keyId)).toMatchObject([
      { outcome: "ok", machine: "zh-videos", zone: "ch-zh", cost: FIVE_SECONDS },
    ]);
  };

  it("failover: a machine unreachable at creation leaves the job to the other zone's machine", async () => {
    await zhTriedSecond();
    const since = Date.now();
    await ti.setMode("refuse");
    await failover("a hot air balloon at dawn");
    // ti-videos was asked first, and could not be reached.
    const machines = (await stack.t.admin("GET", "/machines")).body.data;
    const error = machines.find((m: { name: string }) => m.name === "ti-videos").last_error;
    expect(error).toMatchObject({ source: "request", kind: "connect" });
    expect(Date.parse(error.at)).toBeGreaterThanOrEqual(since);
  });

  it("failover: a machine answering 503 at creation leaves the job to the other zone's machine", async () => {
    await zhTriedSecond();
    await ti.setMode("error500", { errorStatus: 503 });
    await failover("a kayak on a fjord");
    // ti-videos was asked first, and answered 503.
    expect(ti.requests.filter((r) => r.method === "POST" && r.path === "/v1/videos")).toHaveLength(1);
  });

  it("failover: a machine that hangs at creation is given up after engines.first_byte_timeout_ms for the other zone's machine", async () => {
    await zhTriedSecond();
    await ti.setMode("hang");
    await failover("a lantern festival on a river");
    const machines = (await stack.t.admin("GET", "/machines")).body.data;
    expect(machines.find((m: { name: string }) => m.name === "ti-videos").last_error).toMatchObject({
      kind: "timeout",
    });
  });

  it("capacity: one place per machine, three people at once -> two run, the third waits queued until a place is free", async () => {
    both({ jobMs: LONG_JOB_MS });
    const prompts = ["a fox in snow", "a whale at sea", "a tram in the rain"];
    const jobs = await Promise.all(
      prompts.map(async (prompt) => {
        const p = await person();
        return { prompt, key: p.key, id: "" };
      }),
    );
    const created = await Promise.all(
      jobs.map((job) => stack.create({ prompt: job.prompt }, { key: job.key })),
    );
    for (const [i, answer] of created.entries()) {
      expect(answer.status, answer.bytes.toString()).toBe(200);
      Object.assign(jobs[i] ?? {}, { id: answer.body.id });
    }
    const statuses = async () =>
      Promise.all(
        jobs.map(async (job) => ({ job, status: (await get(job.id, job.key)).body.status as string })),
      );
    const inState = async (status: string) =>
      (await statuses()).filter((seen) => seen.status === status).map((seen) => seen.job);
    await until(
      "two jobs on the machines",
      () => (ti.jobs.length === 1 && zh.jobs.length === 1) || undefined,
    );
    await until("two jobs in progress", async () => (await inState("in_progress")).length === 2 || undefined);
    // Many steps later the third is still waiting, and no machine has a second job.
    for (let i = 0; i < 15; i++) {
      const now = await statuses();
      expect(now.filter((seen) => seen.status === "in_progress")).toHaveLength(2);
      expect(now.filter((seen) => seen.status === "queued")).toHaveLength(1);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(ti.jobs.length + zh.jobs.length).toBe(2);
    const [waiting] = await inState("queued");
    const [running, other] = await inState("in_progress");
    if (!waiting || !running || !other) throw new Error("not two running and one waiting");
    const first = await engineJob(running.prompt);

    finish(first.job);
    expect((await stack.waitFor(running.id, undefined, { key: running.key })).status).toBe("completed");
    const third = await engineJob(waiting.prompt);
    // It went to the machine that became free, which by then had delivered the first clip.
    expect(third.fake).toBe(first.fake);
    expect(first.fake.jobs).toHaveLength(2);
    finish((await engineJob(other.prompt)).job);
    finish(third.job);
    for (const job of jobs) {
      expect((await stack.waitFor(job.id, undefined, { key: job.key })).status).toBe("completed");
    }
  });

  it("DELETE of a queued job: 200 video.deleted, the money released, then 404, and a new job may be made", async () => {
    await Promise.all([ti.setMode("refuse"), zh.setMode("refuse")]);
    const p = await person(FIVE_SECONDS);
    const created = await stack.create({ prompt: "a bee on a flower" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    expect(await spend(p.keyId)).toMatchObject({ reserved: FIVE_SECONDS });
    for (let i = 0; i < 10; i++) {
      expect((await get(id, p.key)).body.status).toBe("queued");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const deleted = await stack.call("DELETE", `/v1/videos/${id}`, { key: p.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: "video.deleted", deleted: true });
    expect((await get(id, p.key)).status).toBe(404);
    expect((await stack.call("DELETE", `/v1/videos/${id}`, { key: p.key })).status).toBe(404);
    await expectNothingCharged(p.keyId);

    // The whole limit (exactly one video) is free again.
    await Promise.all([ti.setMode("normal"), zh.setMode("normal")]);
    const next = await stack.create({ prompt: "a bee in a meadow" }, { key: p.key });
    expect(next.status, next.bytes.toString()).toBe(200);
    expect((await stack.waitFor(next.body.id, undefined, { key: p.key })).status).toBe("completed");
    expect(await closed(p.keyId)).toMatchObject({ spent: FIVE_SECONDS, reserved: 0 });
  });

  it("DELETE of a running job: 200 video.deleted, the engine job deleted, the money released, then 404, and a new job may be made", async () => {
    both({ jobMs: LONG_JOB_MS });
    const p = await person(FIVE_SECONDS);
    const prompt = "a heron in the reeds";
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    const { fake, job } = await engineJob(prompt);
    advance(job, 40);
    await until("the job to run", async () => {
      const answer = await get(id, p.key);
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    const deleted = await stack.call("DELETE", `/v1/videos/${id}`, { key: p.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: "video.deleted", deleted: true });
    await until("the engine job to be deleted", () => fake.deletions.includes(job.id));
    expect((await get(id, p.key)).status).toBe(404);
    expect((await stack.call("GET", `/v1/videos/${id}/content`, { key: p.key })).status).toBe(404);
    await expectNothingCharged(p.keyId);

    both({ jobMs: SHORT_JOB_MS });
    const next = await stack.create({ prompt: "a heron taking off" }, { key: p.key });
    expect(next.status, next.bytes.toString()).toBe(200);
    expect((await stack.waitFor(next.body.id, undefined, { key: p.key })).status).toBe("completed");
    expect(await closed(p.keyId)).toMatchObject({ spent: FIVE_SECONDS, reserved: 0 });
  });

  it("one job per person: 8 POSTs at once -> exactly one 200, the rest 429 too_many_video_jobs", async () => {
    both({ jobMs: LONG_JOB_MS });
    const p = await person();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        stack.create({ prompt: `a dragonfly, version ${i}` }, { key: p.key }),
      ),
    );
    const accepted = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted).toHaveLength(1);
    expect(refused).toHaveLength(7);
    const [{ body: video }] = accepted as [(typeof accepted)[number]];
    for (const answer of refused) expect(answer.body.error.code).toBe("too_many_video_jobs");
    const list = await stack.call("GET", "/v1/videos", { key: p.key });
    expect(list.body.data.map((video: { id: string }) => video.id)).toEqual([video.id]);
    // Only one job reached a machine, and only one reservation was made.
    await engineJob(video.prompt);
    expect(ti.jobs.length + zh.jobs.length).toBe(1);
    expect(await spend(p.keyId)).toMatchObject({ reserved: FIVE_SECONDS });

    // Another person is not held back.
    both({ jobMs: SHORT_JOB_MS });
    const other = await person();
    const theirs = await stack.create({ prompt: "a moth at a lamp" }, { key: other.key });
    expect(theirs.status, theirs.bytes.toString()).toBe(200);

    // Once it has ended, the next is accepted.
    for (const fake of [ti, zh]) for (const job of fake.jobs) finish(job);
    expect((await stack.waitFor(video.id, undefined, { key: p.key })).status).toBe("completed");
    const next = await stack.create({ prompt: "a dragonfly at rest" }, { key: p.key });
    expect(next.status, next.bytes.toString()).toBe(200);
    expect((await stack.waitFor(next.body.id, undefined, { key: p.key })).status).toBe("completed");
  });

  it("both machines down: the job stays queued, then fails with queue_timeout after video_queue_timeout_seconds; money released", async () => {
    await Promise.all([ti.setMode("refuse"), zh.setMode("refuse")]);
    const p = await person();
    const created = await stack.create({ prompt: "a comet over the alps" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    for (let i = 0; i < 10; i++) {
      expect((await get(id, p.key)).body.status).toBe("queued");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await spend(p.keyId)).toMatchObject({ reserved: FIVE_SECONDS });
    stack.clock.at += (ENGINES.video_queue_timeout_seconds - 60) * 1000;
    for (let i = 0; i < 5; i++) {
      expect((await get(id, p.key)).body.status).toBe("queued");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    stack.clock.at += 61_000;
    const failed = await stack.waitFor(id, undefined, { key: p.key });
    expect(failed).toMatchObject({ status: "failed", error: { code: "queue_timeout" } });
    expect(failed.error.message.length).toBeGreaterThan(0);
    await expectNothingCharged(p.keyId);
    expect(ti.jobs.length + zh.jobs.length).toBe(0);
  });

  it("a job running past video_run_timeout_seconds fails with timeout and is deleted on its engine; nothing charged", async () => {
    both({ jobMs: LONG_JOB_MS });
    const p = await person();
    const prompt = "a clock tower at midnight";
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    const { fake, job } = await engineJob(prompt);
    advance(job, 20);
    await until("the job to run", async () => {
      const answer = await get(id, p.key);
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    stack.clock.at += (ENGINES.video_run_timeout_seconds - 60) * 1000;
    for (let i = 0; i < 5; i++) {
      expect((await get(id, p.key)).body.status).toBe("in_progress");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    stack.clock.at += 61_000;
    const failed = await stack.waitFor(id, undefined, { key: p.key });
    expect(failed).toMatchObject({ status: "failed", error: { code: "timeout" } });
    await until("the engine job to be deleted", () => fake.deletions.includes(job.id));
    await expectNothingCharged(p.keyId);
  });

  it("7 days after completion a video is gone (404) even before the sweep; the sweep deletes its row", async () => {
    // The periodic sweep stays out of the way: this test runs it.
    stack.t.app.services.videoUpkeep.stop();
    const p = await person();
    const created = await stack.create({ prompt: "an old stone bridge" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    const done = await stack.waitFor(id, undefined, { key: p.key });
    expect(done.status).toBe("completed");
    const row = () =>
      stack.t.store.db.select({ id: videoJobs.id }).from(videoJobs).where(eq(videoJobs.id, id));

    stack.clock.at += 7 * DAY_MS - 1_000;
    expect((await get(id, p.key)).status).toBe(200);
    expect((await stack.call("GET", `/v1/videos/${id}/content`, { key: p.key })).status).toBe(200);

    stack.clock.at += 1_000;
    const gone = await get(id, p.key);
    expect(gone.status).toBe(404);
    expect((await stack.call("GET", `/v1/videos/${id}/content`, { key: p.key })).status).toBe(404);
    expect((await stack.call("GET", "/v1/videos", { key: p.key })).body.data).toEqual([]);
    expect(await row()).toHaveLength(1);

    expect(await stack.t.app.services.videoUpkeep.sweep()).toBeGreaterThanOrEqual(1);
    expect(await row()).toHaveLength(0);
    expect((await get(id, p.key)).status).toBe(404);
    expect((await stack.call("DELETE", `/v1/videos/${id}`, { key: p.key })).status).toBe(404);
  });
});
