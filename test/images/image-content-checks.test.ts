import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fakePictureMark } from "../fakes/index.ts";
import { type ImageStack, PICTURE_MICROS, startImageStack } from "./image-stack.ts";

const made = (s: ImageStack) => s.tiImages.generations.length + s.zhImages.generations.length;
const flagSeeds = (s: ImageStack, seeds: number[]) => {
  const flagImage = (png: Buffer) => seeds.includes(fakePictureMark(png)?.seed ?? -1);
  s.tiModeration.configure({ flagImage });
  s.zhModeration.configure({ flagImage });
};

describe("Images / content checks (zones with policy moderation)", () => {
  let s: ImageStack;
  beforeAll(async () => {
    s = await startImageStack();
  });
  afterAll(() => s.close());
  afterEach(async () => {
    flagSeeds(s, []);
    await s.tiModeration.setMode("normal");
    await s.zhModeration.setMode("normal");
  });

  it("a refused prompt: 400 prompt_refused with the reason, nothing made, nothing billed, no usage record", async () => {
    const key = await s.t.newKey();
    const before = made(s);
    const answer = await s.generate({ prompt: "a forbidden scene", n: 2 }, { key: key.key });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      type: "invalid_request_error",
      code: "prompt_refused",
      param: "prompt",
    });
    expect(answer.body.error.message).toContain("violence");
    expect(made(s)).toBe(before);
    expect(await s.usage(key.keyId)).toEqual([]);
  });

  it("one picture of three refused: the two others are delivered and only they are billed", async () => {
    const key = await s.t.newKey();
    flagSeeds(s, [501]);
    const answer = await s.generate({ prompt: "garden gnomes", n: 3, seed: 500 }, { key: key.key });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toHaveLength(2);
    const [record, ...more] = await s.usage(key.keyId);
    expect(more).toEqual([]);
    expect(record).toMatchObject({
      units: { pictures: 2 },
      cost: (2 * PICTURE_MICROS) / 1_000_000,
      outcome: "ok",
    });
  });

  it("every picture refused: 400 output_refused, nothing delivered, nothing billed", async () => {
    const key = await s.t.newKey();
    flagSeeds(s, [700, 701]);
    const answer = await s.generate(
      { prompt: "two lamps", n: 2, seed: 700, response_format: "url" },
      { key: key.key },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code: "output_refused" });
    for (const record of await s.usage(key.keyId))
      expect(record).toMatchObject({ cost: 0, units: { pictures: 0 } });
  });

  it.each([
    { mode: "error500" as const, rule: "the check answers errors" },
    { mode: "refuse" as const, rule: "the check is unreachable" },
  ])("$rule: 503 moderation_unavailable (server_error), nothing made or billed", async ({ mode }) => {
    const key = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    await s.tiModeration.setMode(mode);
    const before = made(s);
    const answer = await s.generate({ prompt: "a calm lake" }, { key: key.key });
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ type: "server_error", code: "moderation_unavailable" });
    expect(made(s)).toBe(before);
    expect(await s.usage(key.keyId)).toEqual([]);
  });

  it("the picture check fails after the prompt passed: 503 moderation_unavailable, nothing billed", async () => {
    const key = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    // The prompt is a text; the picture is a multi-modal input the fake cannot read when malformed.
    s.tiModeration.configure({
      flagImage: () => {
        throw new Error("the picture check broke");
      },
    });
    const answer = await s.generate({ prompt: "a calm sea" }, { key: key.key });
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe("moderation_unavailable");
    for (const record of await s.usage(key.keyId)) expect(record.cost).toBe(0);
  });
});

describe("Images / content checks decided zone by zone (installation.content_checks)", () => {
  let s: ImageStack;
  beforeAll(async () => {
    s = await startImageStack({ contentChecks: { "ch-ti": "none" } });
  });
  afterAll(() => s.close());

  it("a zone with policy none: no check at all, even of a prompt the check would refuse", async () => {
    const key = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    s.tiModeration.clearRequests();
    const answer = await s.generate({ prompt: "a forbidden scene", n: 2 }, { key: key.key });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
    expect(answer.body.data).toHaveLength(2);
    expect(s.tiModeration.requests).toHaveLength(0);
  });

  it("a zone with policy moderation still checks", async () => {
    const key = await s.t.newKey({ key: { zones: ["ch-zh"] } });
    const answer = await s.generate({ prompt: "a forbidden scene" }, { key: key.key });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("prompt_refused");
  });

  it("a key that may run in both zones: the prompt passes the check of every zone that may make it", async () => {
    const answer = await s.generate({ prompt: "a forbidden scene" });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("prompt_refused");
  });
});
