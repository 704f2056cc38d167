import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createVideosAdapter } from "../../../src/engines/adapters/videos-adapter.ts";
import {
  failedVideoJob,
  fromVideoJob,
  isMp4,
  videoFrameCount,
} from "../../../src/engines/adapters/videos-transforms.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import { statusError } from "../../../src/engines/http/upstream-errors.ts";
import type { VideoEngine } from "../../../src/engines/modalities.ts";
import { type EngineVideoJob, UpstreamError, type VideoCall } from "../../../src/engines/types.ts";
import {
  DEFAULT_VIDEOS_SETTINGS,
  FakeVideosServer,
  fakeMachine,
  formValues,
  isMultipart,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const FIXTURES = fileURLToPath(new URL("../../fixtures/video/", import.meta.url));
const fake = new FakeVideosServer();
let client: UpstreamClient;
let videos: VideoEngine;
let clip: Buffer;
let scratch: string | undefined;
const signal = () => new AbortController().signal;
const machine = (overrides = {}) =>
  fakeMachine("videos", fake.url, {
    models: ["wan-2.2-5b-fast"],
    upstream_names: { "wan-2.2-5b-fast": "Wan-AI/Wan2.2-TI2V-5B-Diffusers" },
    ...overrides,
  });
const call = (overrides: Partial<VideoCall> = {}): VideoCall => ({
  model: "wan-2.2-5b-fast",
  prompt: "a red fox running through fresh snow",
  seconds: 5,
  size: "1280x704",
  fps: 24,
  ...overrides,
});

/** The committed fixture clip, or (until it lands) a one-second one made here with ffmpeg. */
async function realClip(): Promise<Buffer> {
  if (existsSync(join(FIXTURES, "clip.mp4"))) return readFileSync(join(FIXTURES, "clip.mp4"));
  scratch = await mkdtemp(join(tmpdir(), "zona-videos-"));
  const file = join(scratch, "clip.mp4");
  await promisify(execFile)("ffmpeg", [
    ...["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=128x72:rate=24:duration=1"],
    ...["-c:v", "libx264", "-pix_fmt", "yuv420p", "-an", file],
  ]);
  return readFile(file);
}

/** Polls until the job leaves queued and in_progress, keeping every look. */
async function follow(id: string): Promise<EngineVideoJob[]> {
  const seen: EngineVideoJob[] = [];
  for (let i = 0; i < 100; i++) {
    const job = await videos.videoJob(machine(), id, signal());
    seen.push(job);
    if (job.status === "completed" || job.status === "failed") return seen;
    await sleep(20);
  }
  throw new Error("the job never ended");
}

beforeAll(async () => {
  clip = await realClip();
  await fake.start();
  client = new UpstreamClient();
  videos = createVideosAdapter(client, { requestTimeoutMs: 600 }).videos;
});
afterAll(async () => {
  await client.close();
  await fake.close();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_VIDEOS_SETTINGS, clip, models: undefined });
  fake.clearRequests();
});

describe("videos adapter", () => {
  it("a job is created, followed to completed and its clip downloaded as the engine's MP4", async () => {
    fake.configure({ clip: undefined });
    const created = await videos.createVideo(machine(), call(), signal());
    expect(created).toEqual({ id: fake.lastJob.id, status: "queued", progress: 0, error: null });
    const seen = await follow(created.id);
    expect(seen.at(-1)).toEqual({ id: created.id, status: "completed", progress: 100, error: null });
    const mp4 = await videos.videoContent(machine(), created.id, signal());
    expect(isMp4(mp4)).toBe(true);
    expect(mp4.equals(clip)).toBe(true);
  });

  it("sends a form with the upstream name, size, seconds, 24 fps, 4k+1 frames (121 for 5 s) and the seed", async () => {
    fake.configure({ models: ["Wan-AI/Wan2.2-TI2V-5B-Diffusers"] });
    await videos.createVideo(machine(), call({ seed: 1234 }), signal());
    const body = fake.requestsTo("/v1/videos")[0]?.body;
    expect(isMultipart(body)).toBe(true);
    if (!isMultipart(body)) return;
    expect(body.files).toEqual([]);
    expect(Object.fromEntries(body.fields)).toEqual({
      model: "Wan-AI/Wan2.2-TI2V-5B-Diffusers",
      prompt: "a red fox running through fresh snow",
      size: "1280x704",
      seconds: "5",
      fps: "24",
      num_frames: "121",
      seed: "1234",
    });
    expect(fake.lastJob).toMatchObject({ fps: 24, frames: 121, seconds: 5, seed: 1234, form: true });
  });

  it("leaves the seed out when the request has none; a machine url ending in /v1 does not double it", async () => {
    await videos.createVideo(machine({ url: `${fake.url}/v1` }), call({ size: "704x1280" }), signal());
    const body = fake.lastRequest.body;
    expect(fake.lastRequest.path).toBe("/v1/videos");
    expect(isMultipart(body) && formValues(body, "seed")).toEqual([]);
    expect(fake.lastJob.size).toBe("704x1280");
  });

  it("progress rises while the job is in progress; `processing` is read as in_progress", async () => {
    fake.configure({ jobMs: 600, statusWords: "processing" });
    const { id } = await videos.createVideo(machine(), call(), signal());
    const seen = await follow(id);
    const running = seen.filter((job) => job.status === "in_progress");
    expect(running.length).toBeGreaterThan(1);
    const progress = running.map((job) => job.progress ?? -1);
    expect(progress.every((p) => p > 0 && p < 100)).toBe(true);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(fake.requestsTo(`/v1/videos/${id}`).length).toBe(seen.length);
  });

  it("a job that fails mid-way is failed with the engine's error", async () => {
    fake.configure({ failMidJob: true, failMessage: "CUDA out of memory. Tried to allocate 2.00 GiB" });
    const { id } = await videos.createVideo(machine(), call(), signal());
    const last = (await follow(id)).at(-1);
    expect(last).toMatchObject({
      id,
      status: "failed",
      error: "CUDA out of memory. Tried to allocate 2.00 GiB",
    });
  });

  it.each([
    500, 400, 507,
  ])("vLLM-Omni's failed job, answered %i with the job record (a prompt of 2,000 characters): the failed job, not a failure", async (status) => {
    fake.configure({ failMidJob: true, failedStatus: status, failMessage: "CUDA out of memory" });
    // 2,000 characters of three bytes each: the record is larger than an ordinary error read.
    const prompt = "夕暮れの湖に霧".repeat(286).slice(0, 2_000);
    const { id } = await videos.createVideo(machine(), call({ prompt }), signal());
    const last = (await follow(id)).at(-1);
    expect(last).toEqual({ id, status: "failed", progress: 50, error: "CUDA out of memory" });
  });

  it("a look answered with an error status stays a failure without a failed job record read whole: 503 without a job, a record over 64 KB", async () => {
    fake.configure({ statusUnavailable: true });
    const { id } = await videos.createVideo(machine(), call(), signal());
    const unavailable = await failure(videos.videoJob(machine(), id, signal()));
    expect([unavailable.kind, unavailable.status, unavailable.retryable]).toEqual(["status", 503, true]);

    fake.configure({ statusUnavailable: false, failMidJob: true, failedStatus: 500, jobMs: 0 });
    const huge = await videos.createVideo(machine(), call({ prompt: "a".repeat(70_000) }), signal());
    const cut = await failure(videos.videoJob(machine(), huge.id, signal()));
    expect([cut.kind, cut.status, cut.retryable]).toEqual(["status", 500, true]);
  });

  it("the content of a job not completed yet is a 400 status failure, not retryable", async () => {
    fake.configure({ jobMs: 5_000 });
    const { id } = await videos.createVideo(machine(), call(), signal());
    const early = await failure(videos.videoContent(machine(), id, signal()));
    expect([early.kind, early.status, early.retryable]).toEqual(["status", 400, false]);
    expect(early.message).toContain("not completed");
  });

  it("content that is no MP4 is a protocol failure", async () => {
    fake.configure({ jobMs: 0, garbageContent: true });
    const { id } = await videos.createVideo(machine(), call(), signal());
    expect((await failure(videos.videoContent(machine(), id, signal()))).kind).toBe("protocol");
  });

  it("delete forgets the job; deleting an unknown id is fine", async () => {
    const { id } = await videos.createVideo(machine(), call(), signal());
    await videos.deleteVideo(machine(), id, signal());
    expect(fake.deletions).toEqual([id]);
    expect(fake.lastRequest.method).toBe("DELETE");
    const gone = await failure(videos.videoJob(machine(), id, signal()));
    expect([gone.kind, gone.status]).toEqual(["status", 404]);
    await expect(videos.deleteVideo(machine(), id, signal())).resolves.toBeUndefined();
    await expect(videos.deleteVideo(machine(), "video_gen_unknown", signal())).resolves.toBeUndefined();
  });

  it("maps refuse to connect, hang to timeout and 500 to a retryable status failure with the engine's message", async () => {
    await fake.setMode("error500");
    const down = await failure(videos.createVideo(machine(), call(), signal()));
    expect([down.kind, down.status, down.retryable]).toEqual(["status", 500, true]);
    expect(down.message).toContain("fake failure");
    expect((await failure(videos.deleteVideo(machine(), "video_gen_x", signal()))).status).toBe(500);
    await fake.setMode("hang");
    expect((await failure(videos.videoJob(machine(), "video_gen_x", signal()))).kind).toBe("timeout");
    await fake.setMode("refuse");
    expect((await failure(videos.createVideo(machine(), call(), signal()))).kind).toBe("connect");
  });

  it("a model the engine does not serve is its 404 with the name", async () => {
    fake.configure({ models: ["another-model"] });
    const missing = await failure(videos.createVideo(machine(), call(), signal()));
    expect([missing.kind, missing.status]).toEqual(["status", 404]);
    expect(missing.message).toContain("Wan-AI/Wan2.2-TI2V-5B-Diffusers");
  });
});

describe("videos transforms", () => {
  it("frame counts are 4k+1 and cover the seconds", () => {
    expect(videoFrameCount(5, 24)).toBe(121);
    expect(videoFrameCount(1, 24)).toBe(25);
    expect(videoFrameCount(3, 16)).toBe(49);
  });

  it("reads the engines' status words in four states, progress in percent", () => {
    const read = (status: string, extra = {}) => fromVideoJob({ id: "v1", status, ...extra });
    expect(read("queued")).toEqual({ id: "v1", status: "queued", progress: null, error: null });
    expect(read("pending").status).toBe("queued");
    expect(read("running", { progress: 42 })).toMatchObject({ status: "in_progress", progress: 42 });
    expect(read("processing", { progress: 180 }).progress).toBe(100);
    expect(read("completed", { progress: 0 }).progress).toBe(100);
    expect(read("failed", { error: { message: "boom" } }).error).toBe("boom");
    expect(read("error", { error: "plain" }).error).toBe("plain");
    expect(read("failed").error).toBe("the engine gave no reason");
    expect(read("cancelled").status).toBe("failed");
  });

  const bad: Array<[string, unknown]> = [
    ["an unknown status", { id: "v1", status: "dreaming" }],
    ["no status", { id: "v1" }],
    ["no id", { status: "queued" }],
    ["a list", []],
  ];
  for (const [name, raw] of bad) {
    it(`a job record with ${name} is a protocol failure`, () => {
      expect(() => fromVideoJob(raw)).toThrowError(expect.objectContaining({ kind: "protocol" }));
    });
  }

  it("a failed job is read from an error answer only when the call kept it and it is a failed record of the job asked for", () => {
    const record = (extra = {}) =>
      JSON.stringify({
        id: "v1",
        object: "video",
        status: "failed",
        error: { code: 500, message: "OOM" },
        ...extra,
      });
    const kept = (text: string, status = 500) => statusError(status, text, [], true);
    expect(failedVideoJob(kept(record()), "v1")).toEqual({
      id: "v1",
      status: "failed",
      progress: null,
      error: "OOM",
    });
    expect(failedVideoJob(kept(record(), 404), "v1")?.status).toBe("failed");
    expect(failedVideoJob(statusError(500, record(), []), "v1")).toBeUndefined();
    expect(failedVideoJob(kept(record({ status: "in_progress" })), "v1")).toBeUndefined();
    expect(failedVideoJob(kept(record({ id: "v2" })), "v1")).toBeUndefined();
    expect(failedVideoJob(kept(record({ id: undefined })), "v1")).toBeUndefined();
    expect(
      failedVideoJob(kept('{"error": {"message": "Internal Server Error", "code": 500}}'), "v1"),
    ).toBeUndefined();
    expect(failedVideoJob(kept("Internal Server Error"), "v1")).toBeUndefined();
    expect(failedVideoJob(new UpstreamError("connect", "refused"), "v1")).toBeUndefined();
  });

  it("an MP4 is told by its leading ftyp box", () => {
    const ftyp = Buffer.concat([
      Buffer.from([0, 0, 0, 24]),
      Buffer.from("ftypisom\0\0\x02\0isommp41", "latin1"),
    ]);
    expect(isMp4(ftyp)).toBe(true);
    expect(isMp4(Buffer.from("RIFF\0\0\0\0WEBPVP8 ", "latin1"))).toBe(false);
    expect(isMp4(ftyp.subarray(0, 8))).toBe(false);
  });
});
