/**
 * The clip a client downloads (spec "Video job": MP4, 24 frames per second, no sound, marked as
 * AI-generated): whatever the engine's MP4 holds, the delivered one has no sound track, carries
 * the XMP DigitalSourceType `trainedAlgorithmicMedia` and a comment (read back by exiftool where
 * it is installed, and always by our XMP reader), keeps the engine's picture samples byte for byte,
 * and is billed by its own length.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AI_VIDEO_COMMENT, readMp4Xmp } from "../../src/media/mp4-ai-mark.ts";
import { mp4Info } from "../../src/media/mp4-info.ts";
import { expectSameVideoSamples } from "../media/mp4-walk.ts";
import { until, videoFixture, withSeconds } from "./video-helpers.ts";
import { SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const hasExiftool = spawnSync("exiftool", ["-ver"]).status === 0;
const money = (seconds: number) => (seconds * SECOND_MICROS) / 1e6;

/** exiftool's JSON about one file (written to a temporary folder that is removed again). */
function exiftool(mp4: Buffer, args: string[]): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), "zona-video-clip-"));
  try {
    const file = join(dir, "clip.mp4");
    writeFileSync(file, mp4);
    const result = spawnSync("exiftool", ["-j", ...args, file], { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as Array<Record<string, unknown>>;
    expect(parsed).toHaveLength(1);
    return parsed[0] ?? {};
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let stack: VideoStack;
beforeAll(async () => {
  stack = await startVideoStack();
});
afterAll(() => stack?.close());
afterEach(() => {
  for (const fake of [stack.tiVideos, stack.zhVideos]) fake.configure({ clip: undefined });
});

/** Makes a video whose engine clip is `clip` (a new person each time); the download and the person. */
async function madeFrom(clip: Buffer, prompt: string) {
  for (const fake of [stack.tiVideos, stack.zhVideos]) fake.configure({ clip });
  const p = await stack.t.newKey();
  const created = await stack.create({ prompt }, { key: p.key });
  expect(created.status, created.bytes.toString()).toBe(200);
  const done = await stack.waitFor(created.body.id, undefined, { key: p.key });
  expect(done.status, JSON.stringify(done.error)).toBe("completed");
  const content = await stack.call("GET", `/v1/videos/${created.body.id}/content`, { key: p.key });
  expect(content.status).toBe(200);
  expect(content.headers.get("content-type")).toMatch(/^video\/mp4/);
  return { mp4: content.bytes, video: done, person: p };
}

/** The usage records of a key once its job's money is settled. */
async function settledUsage(keyId: string) {
  await until("the job to be billed", async () => {
    const summary = await stack.t.admin("GET", `/usage/summary?key_id=${keyId}`);
    return summary.body.requests === 1 || undefined;
  });
  return stack.usage(keyId);
}

describe.each([
  { name: "clip-audio-faststart.mp4", what: "1280x704, sound, moov first" },
  { name: "clip-audio.mp4", what: "160x88, sound 6 s, moov last" },
  { name: "clip.mp4", what: "160x88, no sound" },
])('spec "Video job" (MP4, no sound, marked as AI-generated): the engine\'s $name ($what)', ({ name }) => {
  const source = videoFixture(name);

  it("is delivered without sound, with the same picture (size, frame rate, samples), marked as made by AI", async () => {
    const before = mp4Info(source);
    const { mp4 } = await madeFrom(source, `a clip made from ${name}`);
    const after = mp4Info(mp4);
    expect(after.hasAudio).toBe(false);
    expect(after.hasVideo).toBe(true);
    expect(after).toMatchObject({ width: before.width, height: before.height, fps: 24 });
    expect(before.fps).toBe(24);
    // The frames are the engine's own bytes, every chunk still found where the tables say.
    expectSameVideoSamples(source, mp4);
    expect(after.durationSeconds).toBeCloseTo(5, 1);

    const xmp = readMp4Xmp(mp4);
    expect(xmp).toBeDefined();
    expect(xmp).toContain("trainedAlgorithmicMedia");
    expect(xmp).toMatch(/DigitalSourceType/);
    expect(mp4.includes(Buffer.from(AI_VIDEO_COMMENT, "utf8"))).toBe(true);
  });

  it.skipIf(!hasExiftool)(
    "read back by exiftool: no audio stream, DigitalSourceType and the comment",
    async () => {
      const { mp4 } = await madeFrom(source, `a clip made from ${name}, for exiftool`);
      const all = exiftool(mp4, ["-a", "-G1"]);
      const audioFields = Object.keys(all).filter((field) => /audio|^Track2:/i.test(field));
      expect(audioFields).toEqual([]);
      expect(Object.entries(all).filter(([, value]) => value === "Audio Track")).toEqual([]);
      expect(all["Track1:HandlerType"]).toBe("Video Track");

      const marks = exiftool(mp4, ["-XMP:all", "-Comment"]);
      expect(String(marks.DigitalSourceType)).toMatch(/trainedAlgorithmicMedia$/);
      expect(marks.Comment).toBe(AI_VIDEO_COMMENT);
    },
  );
});

describe('spec "What the service does": video is billed per second of the clip delivered', () => {
  it("an engine clip of 5 s whose sound runs 6 s is billed 5 s", async () => {
    const source = videoFixture("clip-audio.mp4");
    expect(mp4Info(source).durationSeconds).toBeCloseTo(6, 1);
    const { mp4, video, person } = await madeFrom(source, "a clip whose sound is longer");
    expect(mp4Info(mp4).durationSeconds).toBeCloseTo(5, 1);
    expect(video.seconds).toBe("5");
    expect(await settledUsage(person.keyId)).toMatchObject([
      { endpoint: "videos", units: { seconds: 5 }, cost: money(5), outcome: "ok" },
    ]);
  });

  it("an engine clip of 3 s is billed 3 s", async () => {
    const { mp4, video, person } = await madeFrom(withSeconds(videoFixture("clip.mp4"), 3), "a short clip");
    expect(mp4Info(mp4).durationSeconds).toBeCloseTo(3, 1);
    expect(video.seconds).toBe("3");
    expect(await settledUsage(person.keyId)).toMatchObject([
      { endpoint: "videos", units: { seconds: 3 }, cost: money(3), outcome: "ok" },
    ]);
  });
});
