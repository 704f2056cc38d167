import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMp4Xmp } from "../../src/media/mp4-ai-mark.ts";
import { mp4Info } from "../../src/media/mp4-info.ts";
import { startVideoStack, type VideoStack } from "./video-stack.ts";

describe('spec "Video": the official openai package\'s videos.* methods work against Zona', () => {
  let stack: VideoStack;
  let client: OpenAI;
  beforeAll(async () => {
    stack = await startVideoStack();
    client = new OpenAI({ apiKey: stack.key, baseURL: `${stack.t.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => stack.close());

  it("create (multipart, numbers as strings), retrieve, list, downloadContent and delete round trip", async () => {
    const created = await client.videos.create({
      prompt: "a lighthouse in a storm, waves breaking",
      model: "wan-2.2-5b-fast",
      seconds: "5" as never,
      size: "704x1280" as never,
    });
    expect(created).toMatchObject({
      object: "video",
      status: "queued",
      model: "wan-2.2-5b-fast",
      seconds: "5",
      size: "704x1280",
      error: null,
      completed_at: null,
    });
    // The SDK sent a form: the engine got the request from Zona's own form, with the size asked for.
    let video = await client.videos.retrieve(created.id);
    const deadline = Date.now() + 20_000;
    while (video.status !== "completed" && video.status !== "failed" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      video = await client.videos.retrieve(created.id);
    }
    expect(video.status).toBe("completed");
    expect(video.progress).toBe(100);
    expect(video.expires_at).toBe((video.completed_at ?? 0) + 7 * 24 * 3600);
    const engineJob = [...stack.tiVideos.jobs, ...stack.zhVideos.jobs].at(-1);
    expect(engineJob).toMatchObject({ size: "704x1280", seconds: 5, fps: 24, frames: 121 });

    const page = await client.videos.list({ limit: 10 });
    expect(page.data.map((item) => item.id)).toEqual([created.id]);

    const content = await client.videos.downloadContent(created.id);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    const mp4 = Buffer.from(await content.arrayBuffer());
    expect(mp4Info(mp4).hasAudio).toBe(false);
    expect(readMp4Xmp(mp4)).toContain("trainedAlgorithmicMedia");

    const deleted = await client.videos.delete(created.id);
    expect(deleted).toEqual({ id: created.id, object: "video.deleted", deleted: true });
    await expect(client.videos.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it("list pages through every video with the SDK's auto-pagination (after = last_id)", async () => {
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const video = await client.videos.create({ prompt: `clip number ${index}` });
      ids.push(video.id);
      await stack.waitFor(video.id);
    }
    const seen: string[] = [];
    for await (const video of client.videos.list({ limit: 2 })) seen.push(video.id);
    expect(seen).toEqual([...ids].reverse());
  });

  it('a second job while one is queued is a RateLimitError with code too_many_video_jobs (spec "States and transitions")', async () => {
    const first = await client.videos.create({ prompt: "a slow sunrise" });
    const second = client.videos.create({ prompt: "another one" });
    await expect(second).rejects.toMatchObject({ status: 429, code: "too_many_video_jobs" });
    await stack.waitFor(first.id);
  });
});
